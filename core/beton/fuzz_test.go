package beton

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// FuzzReader feeds arbitrary bytes to the reader: opening and reading every
// field of every sample (and the allocation index) must give errors, never a
// panic or an out-of-bounds slice.
func FuzzReader(f *testing.F) {
	dir := os.Getenv("FFCV_FIXTURES")
	if dir == "" {
		dir = "../../tests/fixtures/ffcv-1.0"
	}
	for _, name := range []string{"scalars", "arrays", "images_raw_var", "images_jpg_var"} {
		if b, err := os.ReadFile(filepath.Join(dir, name+".beton")); err == nil {
			f.Add(shrink(b))
		}
	}
	f.Add(make([]byte, HeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := newReader("fuzz", data, nil)
		if err != nil {
			return
		}
		n := min(r.NumSamples(), 64)
		for i := uint64(0); i < n; i++ {
			for fi := range r.Fields {
				col, heap, err := r.Read(i, fi)
				if err != nil {
					continue
				}
				if len(col) != r.Layout.Columns[fi].Size {
					t.Fatalf("column of %d bytes, want %d", len(col), r.Layout.Columns[fi].Size)
				}
				if heap != nil && r.Fields[fi].Type == field.Bytes && uint64(len(heap)) != binary.LittleEndian.Uint64(col[8:]) {
					t.Fatalf("heap of %d bytes, column says %d", len(heap), binary.LittleEndian.Uint64(col[8:]))
				}
			}
		}
		for k := uint64(0); k < min(r.NumAllocs(), 64); k++ {
			r.AllocSize(r.Alloc(k).Ptr)
		}
	})
}

// shrink keeps fixture seeds small (minimising large inputs is what slows the
// fuzzer down): the first 4 KiB and 16 allocation table entries, with the
// table pointer moved to follow them.
func shrink(b []byte) []byte {
	h, err := parseHeader(b)
	if err != nil || len(b) <= 1<<12 {
		return b
	}
	table := b[h.AllocTablePtr:]
	table = table[:min(len(table), 16*AllocEntrySize)]
	keep := min(uint64(len(b))-uint64(len(table)), 1<<12)
	out := append(append([]byte{}, b[:keep]...), table...)
	binary.LittleEndian.PutUint64(out[16:], keep)
	return out
}
