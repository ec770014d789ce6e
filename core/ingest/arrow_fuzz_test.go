package ingest

import (
	"encoding/binary"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
)

func le32(xs ...int32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

// FuzzArrowItems feeds arbitrary Arrow buffers (as ffcv_ingest_push hands
// them over) to ArrowItems: it returns an error, or one item per row whose
// value was read from within the buffers (or a problem that drops it);
// never a panic or a read past a buffer.
func FuzzArrowItems(f *testing.F) {
	// A string column "a", "bb", null; a list column [["x", "y"], []]; int64s.
	f.Add(uint8(3), uint8(0), uint8(0), uint8(ArrowBinary), uint8(field.Text), []byte{0b011}, []byte(nil), le32(0, 1, 3, 3), []byte("abb"), []byte(nil))
	f.Add(uint8(2), uint8(0), uint8(32), uint8(ArrowBinary), uint8(field.Text), []byte(nil), le32(0, 2, 2), le32(0, 1, 2), []byte("xy"), []byte{0b11})
	f.Add(uint8(2), uint8(1), uint8(0), uint8(ArrowInt64), uint8(field.Int), []byte(nil), []byte(nil), []byte(nil), make([]byte, 24), []byte(nil))
	f.Add(uint8(1), uint8(0), uint8(0), uint8(ArrowInt64), uint8(field.Int), []byte(nil), []byte(nil), []byte(nil), make([]byte, 5), []byte(nil))
	f.Add(uint8(1), uint8(0), uint8(0), uint8(ArrowLargeBinary), uint8(field.JSON), []byte(nil), []byte(nil), make([]byte, 16), []byte("{}"), []byte(nil))
	f.Fuzz(func(t *testing.T, rows, offset, list, kind, typ uint8, validity, listOffsets, offsets, data, valuesValidity []byte) {
		d := field.Desc{Name: "f", Type: field.Type(typ)}
		switch d.Type {
		case field.Text, field.RGBImage, field.JSON, field.Bytes, field.Int, field.Float:
		default:
			d.Type = field.Bytes
		}
		c := ArrowColumn{Kind: int(kind % 5), List: []int{0, 32, 64}[list%3], Offset: int64(offset % 8), Validity: validity,
			ListOffsets: listOffsets, Offsets: offsets, Data: data, ValuesValidity: valuesValidity}
		if len(validity) == 0 {
			c.Validity = nil
		}
		if d.Type == field.Text && list%2 == 1 { // tokens for the captions, when they can be counted
			if n, err := c.Captions(int(rows)); err == nil && n < 1<<16 {
				c.TokenOffsets = make([]uint64, n+1)
				for i := range c.TokenOffsets {
					c.TokenOffsets[i] = uint64(i)
				}
				c.Tokens = make([]uint32, n)
			}
		}
		items, err := ArrowItems([]field.Desc{d}, []ArrowColumn{c}, nil, int(rows), 0)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(items) != int(rows) {
			t.Fatalf("%d items for %d rows", len(items), rows)
		}
		for r, it := range items {
			if dropped(it) {
				continue
			}
			v := it.Values[0]
			switch d.Type {
			case field.Text:
				n := 0
				for _, s := range v.Texts {
					n += len(s)
				}
				if len(v.Texts) == 0 || n > len(data)*max(1, len(v.Texts)) {
					t.Fatalf("row %d: %d captions of %d bytes from %d bytes of data", r, len(v.Texts), n, len(data))
				}
				if c.TokenOffsets != nil && len(v.Tokens) != len(v.Texts) {
					t.Fatalf("row %d: %d token lists for %d captions", r, len(v.Tokens), len(v.Texts))
				}
			case field.RGBImage, field.JSON, field.Bytes:
				if len(v.Data) > len(data) {
					t.Fatalf("row %d: %d bytes from %d of data", r, len(v.Data), len(data))
				}
			}
		}
	})
}
