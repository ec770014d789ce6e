// Package gotests holds integration tests across the core packages, run
// against the files FFCV 1.0.1 wrote (tests/fixtures/ffcv-1.0).
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
	"github.com/ffcv-go/ffcv-go/core/jpeg"
)

func fixtureDir(t testing.TB) string {
	dir := os.Getenv("FFCV_FIXTURES")
	if dir == "" {
		dir = "../fixtures/ffcv-1.0"
	}
	if _, err := os.Stat(filepath.Join(dir, "scalars.beton")); err != nil {
		t.Fatalf("fixtures not found (set FFCV_FIXTURES): %v", err)
	}
	return dir
}

func openFixture(t *testing.T, name string) (*beton.Reader, map[string]npyArray) {
	dir := fixtureDir(t)
	r, err := beton.Open(filepath.Join(dir, name+".beton"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	want, err := loadNPZ(filepath.Join(dir, name+".npz"))
	if err != nil {
		t.Fatal(err)
	}
	return r, want
}

func mustRead(t *testing.T, r *beton.Reader, i uint64, f int) ([]byte, []byte) {
	t.Helper()
	col, heap, err := r.Read(i, f)
	if err != nil {
		t.Fatal(err)
	}
	return col, heap
}

func TestFixtureFields(t *testing.T) {
	tests := []struct {
		file  string
		n     uint64
		page  uint64
		types []field.Type
		names []string
	}{
		{"scalars", 257, 8 << 20, []field.Type{field.Int, field.Float}, []string{"label", "value"}},
		{"arrays", 100, 2 << 20, []field.Type{field.NDArray, field.NDArray, field.TorchTensor, field.Bytes, field.JSON}, []string{"arr", "small", "tensor", "blob", "doc"}},
		{"images_raw_fixed", 40, 2 << 20, []field.Type{field.RGBImage, field.Int}, []string{"image", "label"}},
		{"images_jpg_var", 30, 2 << 20, []field.Type{field.RGBImage, field.Int}, []string{"image", "label"}},
		{"pages_2mib", 12, 2 << 20, []field.Type{field.Bytes, field.Int}, []string{"blob", "index"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r, _ := openFixture(t, tc.file)
			if r.NumSamples() != tc.n || r.PageSize() != tc.page {
				t.Fatalf("samples %d page %d, want %d %d", r.NumSamples(), r.PageSize(), tc.n, tc.page)
			}
			for i, f := range r.Fields {
				if f.Type != tc.types[i] || f.Name != tc.names[i] {
					t.Errorf("field %d = %v %q, want %v %q", i, f.Type, f.Name, tc.types[i], tc.names[i])
				}
			}
		})
	}
}

func TestFixtureScalars(t *testing.T) {
	r, want := openFixture(t, "scalars")
	labels, values := want["label"].int64s(), want["value"].data
	for i := uint64(0); i < r.NumSamples(); i++ {
		c0, _ := mustRead(t, r, i, 0)
		c1, _ := mustRead(t, r, i, 1)
		if got := int64(binary.LittleEndian.Uint64(c0)); got != labels[i] {
			t.Fatalf("label[%d] = %d, want %d", i, got, labels[i])
		}
		got := math.Float64frombits(binary.LittleEndian.Uint64(c1))
		if w := math.Float64frombits(binary.LittleEndian.Uint64(values[8*i:])); got != w {
			t.Fatalf("value[%d] = %v, want %v", i, got, w)
		}
	}
}

func TestFixtureArrays(t *testing.T) {
	r, want := openFixture(t, "arrays")
	if got := r.Fields[0]; got.DType != "<f4" || len(got.Shape) != 2 || got.Shape[0] != 3 || got.Shape[1] != 5 {
		t.Fatalf("arr field = %+v", got)
	}
	if got := r.Fields[1]; got.DType != "<i2" || len(got.Shape) != 1 || got.Shape[0] != 7 {
		t.Fatalf("small field = %+v", got)
	}
	if got := r.Fields[2]; got.DType != "<f8" || got.Type != field.TorchTensor && got.Type != field.NDArray {
		t.Fatalf("tensor field = %+v", got)
	}
	lengths, blobs := want["blob_lengths"].int64s(), want["blob_concat"].data
	docs := want["doc_json"].strings()
	off := 0
	for i := uint64(0); i < r.NumSamples(); i++ {
		for f, key := range []string{"arr", "small", "tensor"} {
			_, heap := mustRead(t, r, i, f)
			n := len(heap)
			if w := want[key].data[int(i)*n : int(i+1)*n]; !bytes.Equal(heap, w) {
				t.Fatalf("%s[%d] differs", key, i)
			}
		}
		_, blob := mustRead(t, r, i, 3)
		if w := blobs[off : off+int(lengths[i])]; !bytes.Equal(blob, w) {
			t.Fatalf("blob[%d] differs", i)
		}
		off += int(lengths[i])
		_, doc := mustRead(t, r, i, 4)
		if string(doc) != docs[i]+"\x00" {
			t.Fatalf("doc[%d] = %q, want %q + NUL", i, doc, docs[i])
		}
	}
}

func TestFixtureRawImages(t *testing.T) {
	for _, name := range []string{"images_raw_var", "images_smart_var", "images_proportion_var"} {
		t.Run(name, func(t *testing.T) {
			r, want := openFixture(t, name)
			modes, hs, ws := want["modes"].int64s(), want["heights"].int64s(), want["widths"].int64s()
			pix := want["pixels_concat"].data
			off := 0
			for i := uint64(0); i < r.NumSamples(); i++ {
				col, heap := mustRead(t, r, i, 0)
				w, h := int(binary.LittleEndian.Uint16(col[1:])), int(binary.LittleEndian.Uint16(col[3:]))
				if int64(col[0]) != modes[i] || int64(w) != ws[i] || int64(h) != hs[i] {
					t.Fatalf("sample %d: mode %d %dx%d, want %d %dx%d", i, col[0], w, h, modes[i], ws[i], hs[i])
				}
				n := w * h * 3
				if col[0] == field.ModeRaw && !bytes.Equal(heap, pix[off:off+n]) {
					t.Fatalf("sample %d: raw pixels differ", i)
				}
				if col[0] == field.ModeJPEG && (len(heap) < 4 || heap[0] != 0xff || heap[1] != 0xd8) {
					t.Fatalf("sample %d: stored JPEG does not start with SOI", i)
				}
				off += n
			}
		})
	}
}

func TestFixturePages(t *testing.T) {
	r, want := openFixture(t, "pages_2mib")
	lengths, blobs := want["blob_lengths"].int64s(), want["blob_concat"].data
	off := 0
	pages := map[uint64]bool{}
	for i := uint64(0); i < r.NumSamples(); i++ {
		col, blob := mustRead(t, r, i, 0)
		if !bytes.Equal(blob, blobs[off:off+int(lengths[i])]) {
			t.Fatalf("blob %d differs", i)
		}
		off += int(lengths[i])
		pages[binary.LittleEndian.Uint64(col)/r.PageSize()] = true
	}
	if len(pages) < 3 {
		t.Fatalf("samples lie on %d pages, want several", len(pages))
	}
}

// TestFixtureJPEGImages decodes every stored JPEG and compares it with the
// pixels libjpeg-turbo gave FFCV's side (accurate IDCT, so within ±2).
func TestFixtureJPEGImages(t *testing.T) {
	for _, name := range []string{"images_jpg_var", "images_smart_var", "images_proportion_var"} {
		t.Run(name, func(t *testing.T) {
			r, want := openFixture(t, name)
			pix := want["pixels_concat"].data
			d := jpeg.NewDecoder()
			defer d.Close()
			off, jpegs := 0, 0
			for i := uint64(0); i < r.NumSamples(); i++ {
				col, heap := mustRead(t, r, i, 0)
				w, h := int(binary.LittleEndian.Uint16(col[1:])), int(binary.LittleEndian.Uint16(col[3:]))
				ref := pix[off : off+w*h*3]
				off += w * h * 3
				if col[0] != field.ModeJPEG {
					continue
				}
				jpegs++
				got := make([]byte, w*h*3)
				gw, gh, err := d.Decode(heap, got)
				if err != nil || gw != w || gh != h {
					t.Fatalf("sample %d: decode %dx%d: %v (metadata %dx%d)", i, gw, gh, err, w, h)
				}
				worst := 0
				for k := range got {
					worst = max(worst, absDiff(got[k], ref[k]))
				}
				if worst > 2 {
					t.Fatalf("sample %d: pixels differ by up to %d", i, worst)
				}
			}
			if jpegs == 0 {
				t.Fatalf("no JPEG sample in %s", name)
			}
		})
	}
}

func absDiff(a, b byte) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}
