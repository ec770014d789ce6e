package ingest

import (
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// Buffers shorter than the rows they should cover are errors naming what
// is short, not reads past their end.
func TestArrowShortBuffers(t *testing.T) {
	text := field.Desc{Name: "caption", Type: field.Text}
	label := field.Desc{Name: "label", Type: field.Int}
	for _, tc := range []struct {
		name string
		d    field.Desc
		c    ArrowColumn
		rows int
		want string
	}{
		{"validity", text, ArrowColumn{Validity: []byte{0xff}, Offsets: le32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), Data: []byte("abcdefghi")}, 9, "validity bit 8"},
		{"offsets", text, ArrowColumn{Offsets: le32(0, 1), Data: []byte("ab")}, 2, "offset 2 past"},
		{"list offsets", text, ArrowColumn{List: 32, ListOffsets: le32(0, 1), Offsets: le32(0, 1), Data: []byte("a")}, 2, "offset 2 past"},
		{"values validity", text, ArrowColumn{List: 32, ListOffsets: le32(0, 9), ValuesValidity: []byte{0xff}, Offsets: le32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), Data: []byte("abcdefghi")}, 1, "validity bit 8"},
		{"empty list", text, ArrowColumn{List: 64, ListOffsets: make([]byte, 16), Offsets: le32(0), Data: nil}, 1, ""},
		{"token offsets", text, ArrowColumn{Offsets: le32(0, 1, 2), Data: []byte("ab"), TokenOffsets: []uint64{0, 0}}, 2, "caption 1 has no token offsets"},
		{"short int64", label, ArrowColumn{Kind: ArrowInt64, Data: make([]byte, 5)}, 1, "past the 5 bytes"},
		{"int64s", label, ArrowColumn{Kind: ArrowInt64, Data: make([]byte, 8)}, 2, "value 1 past the 8 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := ArrowItems([]field.Desc{tc.d}, []ArrowColumn{tc.c}, nil, tc.rows, 0)
			if tc.want == "" { // an empty list: a problem, not an error
				if err != nil || len(items) != 1 || !dropped(items[0]) {
					t.Fatalf("items %v, %v", items, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
