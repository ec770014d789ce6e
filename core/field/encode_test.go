package field

import (
	"bytes"
	"errors"
	"testing"
)

// Custom fields arrive encoded by their Python encode(): the encoder checks
// the column size and where the heap pointer goes, and passes the rest through.
func TestCustomEncoder(t *testing.T) {
	enc := NewCustomEncoder("caption", Column{Size: 16, Align: 8})
	col := bytes.Repeat([]byte{7}, 16)
	for _, tc := range []struct {
		name     string
		v        Value
		wantHeap bool
		wantErr  bool
	}{
		{"heap at 0", Value{Column: col, Data: []byte("abc"), PtrOffset: 0}, true, false},
		{"heap at 8", Value{Column: col, Data: []byte("abc"), PtrOffset: 8}, true, false},
		{"no heap", Value{Column: col, PtrOffset: -1}, false, false},
		{"empty heap", Value{Column: col, PtrOffset: 0}, true, false},
		{"pointer past the column", Value{Column: col, Data: []byte("x"), PtrOffset: 9}, false, true},
		{"short column", Value{Column: col[:8], PtrOffset: -1}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := enc.Encode(tc.v, 3)
			if tc.wantErr {
				if !errors.Is(err, ErrData) {
					t.Fatalf("err = %v, want ErrData", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(e.Column, col) || e.HasHeap != tc.wantHeap {
				t.Fatalf("got column %v heap %v, want %v %v", e.Column, e.HasHeap, col, tc.wantHeap)
			}
			if tc.wantHeap && (!bytes.Equal(e.Heap, tc.v.Data) || e.PtrOffset != tc.v.PtrOffset) {
				t.Fatalf("heap %q at %d, want %q at %d", e.Heap, e.PtrOffset, tc.v.Data, tc.v.PtrOffset)
			}
		})
	}
}
