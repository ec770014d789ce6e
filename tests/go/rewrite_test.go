package gotests

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
)

// valuesOf reads sample i of r back into writer input.
func valuesOf(t *testing.T, r *beton.Reader, i uint64) []field.Value {
	vals := make([]field.Value, len(r.Fields))
	for f, d := range r.Fields {
		col, heap := mustRead(t, r, i, f)
		switch d.Type {
		case field.Int:
			vals[f].Int = int64(binary.LittleEndian.Uint64(col))
		case field.Float:
			vals[f].Float = math.Float64frombits(binary.LittleEndian.Uint64(col))
		case field.JSON:
			vals[f].Data = heap[:len(heap)-1] // the writer adds the NUL back
		case field.RGBImage:
			vals[f] = field.Value{Data: heap, Width: int(binary.LittleEndian.Uint16(col[1:])), Height: int(binary.LittleEndian.Uint16(col[3:])), Channels: 3}
		default:
			vals[f].Data = heap
		}
	}
	return vals
}

// ffcvRelaid is FFCV's file want (read by r) in the layout our writer
// gives the same content (FORMAT.md, "Heap pages"): FFCV's pages up to the
// last heap byte, not padded to a whole page; and a heap that fits after the
// tables in their page moved there, every pointer into it with it.
func ffcvRelaid(r *beton.Reader, want []byte) []byte {
	ps := r.PageSize()
	tables := r.MetadataOffset() + r.NumSamples()*uint64(r.Layout.RowSize)
	first := (tables + ps - 1) / ps * ps // FFCV's heap: the page after the tables
	end := tables
	for k := uint64(0); k < r.NumAllocs(); k++ {
		if e := r.Alloc(k); e.Size > 0 {
			end = max(end, e.Ptr+e.Size)
		}
	}
	allocs := bytes.Clone(r.AllocTable())
	out := bytes.Clone(want[:min(end, uint64(len(want)))])
	if end > first && tables+end-first <= ps {
		from := first
		move := func(b []byte) {
			if p := binary.LittleEndian.Uint64(b); p >= from {
				binary.LittleEndian.PutUint64(b, p-from+tables)
			}
		}
		for i := uint64(0); i < r.NumSamples(); i++ {
			row := out[r.MetadataOffset()+i*uint64(r.Layout.RowSize):]
			for f, d := range r.Fields {
				if off, ok := field.HeapPtrOffset(d.Type); ok {
					move(row[r.Layout.Offsets[f]+off:])
				}
			}
		}
		for e := 8; e < len(allocs); e += beton.AllocEntrySize {
			move(allocs[e:])
		}
		out = append(out[:tables], want[first:end]...)
		end = tables + end - first
	}
	binary.LittleEndian.PutUint64(out[16:], end) // the allocation table's pointer
	return append(out, allocs...)
}

// TestRewriteKeepsFFCVContent writes each fixture's content again and
// expects FFCV's bytes exactly, in our layout (ffcvRelaid), whatever the
// number of workers: the one-page fixtures lose the padding before their
// heap and after it, the multi-page one only after it.
func TestRewriteKeepsFFCVContent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxSize int // bytes our file may take; FFCV's are 4 or 8 MiB
	}{
		{"scalars", 7 << 10},
		{"arrays", 60 << 10},
		{"pages_2mib", 7_900_000},
		{"images_raw_fixed", 200 << 10},
		{"images_raw_var", 200 << 10},
	} {
		for _, workers := range []int{1, 3} {
			t.Run(tc.name, func(t *testing.T) {
				r, _ := openFixture(t, tc.name)
				encs := make([]field.Encoder, len(r.Fields))
				for f, d := range r.Fields {
					var err error
					if encs[f], err = imageenc.NewEncoder(d, field.ImageOptions{WriteMode: "raw", JPEGQuality: 90}); err != nil {
						t.Fatal(err)
					}
				}
				out := filepath.Join(t.TempDir(), tc.name+".beton")
				w, err := beton.Create(out, r.Fields, encs, r.NumSamples(), beton.WriterOptions{PageSize: r.PageSize(), Workers: workers})
				if err != nil {
					t.Fatal(err)
				}
				for i := uint64(0); i < r.NumSamples(); i++ {
					if err := w.Put(i, valuesOf(t, r, i)); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				got, _ := os.ReadFile(out)
				data, _ := r.Data()
				if want := ffcvRelaid(r, data); !bytes.Equal(got, want) {
					n := 0
					for n < len(got) && n < len(want) && got[n] == want[n] {
						n++
					}
					t.Fatalf("rewritten file differs from FFCV's content at byte %d (sizes %d, %d)", n, len(got), len(want))
				}
				if len(got) > tc.maxSize {
					t.Errorf("rewritten file has %d bytes, more than %d (FFCV's: %d)", len(got), tc.maxSize, len(data))
				}
			})
		}
	}
}

// TestSmartModeMatchesFFCV re-encodes the smart fixture's images with the
// same options and expects FFCV's choice of JPEG or raw for each.
func TestSmartModeMatchesFFCV(t *testing.T) {
	_, want := openFixture(t, "images_smart_var")
	modes, hs, ws := want["modes"].int64s(), want["heights"].int64s(), want["widths"].int64s()
	pix := want["pixels_concat"].data
	enc, err := imageenc.NewEncoder(field.Desc{Type: field.RGBImage, Name: "image"},
		field.ImageOptions{WriteMode: "smart", SmartThreshold: 4800, MaxResolution: 64, JPEGQuality: 90})
	if err != nil {
		t.Fatal(err)
	}
	off := 0
	for i := range modes {
		w, h := int(ws[i]), int(hs[i])
		e, err := enc.Encode(field.Value{Data: pix[off : off+w*h*3], Width: w, Height: h, Channels: 3}, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		off += w * h * 3
		if int64(e.Column[field.RGBModeOff]) != modes[i] {
			t.Errorf("sample %d (%dx%d): mode %d, FFCV wrote %d", i, w, h, e.Column[0], modes[i])
		}
	}
}
