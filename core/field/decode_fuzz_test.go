package field

import (
	"encoding/binary"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzCheckText feeds arbitrary Text samples (column counts and heap
// bytes) to CheckText: it returns ErrData, or every caption is readable
// by TextCaption, valid UTF-8, within the column's maxima, and the
// captions' bytes and tokens fill the heap exactly.
func FuzzCheckText(f *testing.F) {
	enc, _ := NewEncoder(Desc{Type: Text, Name: "caption", Text: &TextArgs{Tokens: true}})
	for _, v := range []Value{
		{Texts: [][]byte{[]byte("a photo")}, Tokens: [][]uint32{{1, 2, 3}}},
		{Texts: [][]byte{[]byte("x"), []byte(""), []byte("é")}, Tokens: [][]uint32{{}, {7}, {8, 9}}},
	} {
		e, err := enc.Encode(v, 0)
		if err != nil {
			f.Fatal(err)
		}
		m := ParseTextMeta(e.Column)
		f.Add(uint32(m.Captions), uint32(m.MaxBytes), uint32(m.MaxTokens), e.Heap)
	}
	f.Add(uint32(1<<20), uint32(0), uint32(0), make([]byte, 64))
	f.Fuzz(func(t *testing.T, captions, maxBytes, maxTokens uint32, heap []byte) {
		m := TextMeta{Size: uint64(len(heap)), Captions: int(captions), MaxBytes: int(maxBytes), MaxTokens: int(maxTokens)}
		if err := CheckText(m, heap); err != nil {
			if !errors.Is(err, ErrData) {
				t.Fatalf("error without ErrData: %v", err)
			}
			return
		}
		total := m.Captions * textEntry
		for i := 0; i < m.Captions; i++ {
			c, err := TextCaption(m, heap, i)
			if err != nil {
				t.Fatalf("checked, but caption %d: %v", i, err)
			}
			if !utf8.Valid(c.Text) || len(c.Text) > m.MaxBytes || c.NumTokens() > m.MaxTokens {
				t.Fatalf("caption %d: %d bytes, %d tokens past the maxima %d, %d", i, len(c.Text), c.NumTokens(), m.MaxBytes, m.MaxTokens)
			}
			total += len(c.Text) + len(c.Tokens)
		}
		if total != len(heap) {
			t.Fatalf("captions take %d of %d heap bytes", total, len(heap))
		}
	})
}

// FuzzDecodeMask feeds arbitrary Mask columns and heaps to Pixels and
// DecodeMask: Pixels returns ErrData, or a size bounded by the stored
// bytes (what a reader then allocates), which DecodeMask fills or
// refuses with ErrData.
func FuzzDecodeMask(f *testing.F) {
	enc, _ := NewTargetEncoder(Desc{Type: Mask, Name: "mask", Target: &TargetArgs{DType: "<u2", Follows: "image", Encoding: "lz4"}})
	pix := make([]byte, 40*30*2)
	for i := range pix {
		pix[i] = byte(i / 97)
	}
	e, err := enc.(Follower).EncodeFollowing(Value{Data: pix, Width: 40, Height: 30}, 0, ImageGeometry{SrcW: 40, SrcH: 30, W: 20, H: 15})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(e.Column, e.Heap, true)
	f.Add(e.Column, e.Heap[:len(e.Heap)/2], true)
	raw := make([]byte, MaskColumnSize)
	binary.LittleEndian.PutUint64(raw[8:], 6)
	binary.LittleEndian.PutUint32(raw[16:], 3)
	binary.LittleEndian.PutUint32(raw[20:], 2)
	f.Add(raw, []byte{0, 1, 2, 3, 4, 5}, false)
	f.Fuzz(func(t *testing.T, col, heap []byte, wide bool) {
		if len(col) < MaskColumnSize {
			return
		}
		item := 1
		if wide {
			item = 2
		}
		m := ParseMaskMeta(col)
		m.Size = uint64(len(heap)) // as the reader gives it
		n, err := m.Pixels(item, len(heap))
		if err != nil {
			if !errors.Is(err, ErrData) {
				t.Fatalf("error without ErrData: %v", err)
			}
			return
		}
		if n != m.Width*m.Height*item || n > maxLZ4Ratio*len(heap) {
			t.Fatalf("%dx%d mask of %d bytes from %d stored", m.Width, m.Height, n, len(heap))
		}
		if err := DecodeMask(m, heap, make([]byte, n)); err != nil && !errors.Is(err, ErrData) {
			t.Fatalf("error without ErrData: %v", err)
		}
	})
}
