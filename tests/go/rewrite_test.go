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

// TestRewriteIsByteIdentical writes each fixture's content again and expects
// FFCV's bytes exactly, whatever the number of workers.
func TestRewriteIsByteIdentical(t *testing.T) {
	for _, name := range []string{"scalars", "arrays", "pages_2mib", "images_raw_fixed", "images_raw_var"} {
		for _, workers := range []int{1, 3} {
			t.Run(name, func(t *testing.T) {
				r, _ := openFixture(t, name)
				encs := make([]field.Encoder, len(r.Fields))
				for f, d := range r.Fields {
					var err error
					if encs[f], err = imageenc.NewEncoder(d, field.ImageOptions{WriteMode: "raw", JPEGQuality: 90}); err != nil {
						t.Fatal(err)
					}
				}
				out := filepath.Join(t.TempDir(), name+".beton")
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
				if want, _ := r.Data(); !bytes.Equal(got, want) {
					n := 0
					for n < len(got) && n < len(want) && got[n] == want[n] {
						n++
					}
					t.Fatalf("rewritten file differs from FFCV's at byte %d (sizes %d, %d)", n, len(got), len(want))
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
