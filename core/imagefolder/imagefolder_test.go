package imagefolder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
)

// photo is a w×h JPEG with smooth content, so it compresses like a photo.
func photo(t testing.TB, w, h, seed int) []byte {
	t.Helper()
	pix := make([]byte, w*h*3)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			o := (y*w + x) * 3
			pix[o] = byte(x*255/w + seed)
			pix[o+1] = byte(y*255/h + 3*seed)
			pix[o+2] = byte((x+y)/2 + 7*seed)
		}
	}
	b, err := jpeg.Encode(pix, w, h, 90)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tree writes files (relative path → contents) under a new directory.
func tree(t testing.TB, files map[string][]byte) string {
	t.Helper()
	root := t.TempDir()
	for p, b := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestScan(t *testing.T) {
	img := []byte("not decoded by Scan")
	tests := []struct {
		name    string
		files   map[string][]byte
		classes []string
		files2  []string // relative to root, in order
		labels  []int
		err     string
	}{
		{
			name:    "classes and files sorted, labels by class position",
			files:   map[string][]byte{"dog/b.jpg": img, "dog/a.jpg": img, "cat/z.png": img},
			classes: []string{"cat", "dog"},
			files2:  []string{"cat/z.png", "dog/a.jpg", "dog/b.jpg"},
			labels:  []int{0, 1, 1},
		},
		{
			name:    "nested folders, any-case extensions, other files skipped",
			files:   map[string][]byte{"a/x/1.JPEG": img, "a/2.webp": img, "a/notes.txt": img, "b/3.Jpg": img},
			classes: []string{"a", "b"},
			files2:  []string{"a/2.webp", "a/x/1.JPEG", "b/3.Jpg"},
			labels:  []int{0, 0, 1},
		},
		{
			name:    "an empty class keeps its label",
			files:   map[string][]byte{"a/.keep": img, "b/1.jpg": img},
			classes: []string{"a", "b"},
			files2:  []string{"b/1.jpg"},
			labels:  []int{1},
		},
		{name: "no class folders", files: map[string][]byte{"1.jpg": img}, err: "no class folders"},
		{name: "no images", files: map[string][]byte{"a/readme.md": img}, err: "hold no image files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, tc.files)
			f, err := Scan(root)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrLayout) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(f.Classes, ",") != strings.Join(tc.classes, ",") {
				t.Errorf("classes = %v, want %v", f.Classes, tc.classes)
			}
			var rel []string
			for _, p := range f.Files {
				r, _ := filepath.Rel(root, p)
				rel = append(rel, filepath.ToSlash(r))
			}
			if strings.Join(rel, ",") != strings.Join(tc.files2, ",") {
				t.Errorf("files = %v, want %v", rel, tc.files2)
			}
			for i := range tc.labels {
				if f.Labels[i] != tc.labels[i] {
					t.Errorf("labels = %v, want %v", f.Labels, tc.labels)
					break
				}
			}
		})
	}
	if _, err := Scan(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Scan of a missing folder succeeded")
	}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name  string
		files map[string][]byte
		opts  field.ImageOptions
		sizes [][2]int // stored width, height per sample
		err   string
	}{
		{
			name:  "JPEGs kept at their size (transcoded)",
			files: map[string][]byte{"a/1.jpg": photo(t, 64, 48, 1), "b/2.jpg": photo(t, 40, 80, 2)},
			opts:  field.ImageOptions{WriteMode: "jpg", JPEGQuality: 90},
			sizes: [][2]int{{64, 48}, {40, 80}},
		},
		{
			name:  "max_resolution shrinks the longer side",
			files: map[string][]byte{"a/1.jpg": photo(t, 200, 100, 1), "a/2.jpg": photo(t, 30, 20, 2)},
			opts:  field.ImageOptions{WriteMode: "raw", MaxResolution: 50, JPEGQuality: 90},
			sizes: [][2]int{{50, 25}, {30, 20}},
		},
		{
			name:  "a corrupt file names its path",
			files: map[string][]byte{"a/1.jpg": photo(t, 32, 32, 1), "a/2.jpg": []byte("\xff\xd8garbage")},
			opts:  field.ImageOptions{WriteMode: "jpg", JPEGQuality: 90},
			err:   "2.jpg",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, tc.files)
			f, err := Scan(root)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out.beton")
			err = f.Write(out, Options{Image: tc.opts, PageSize: 1 << 21, Workers: 2})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to name %q", err, tc.err)
				}
				if _, serr := os.Stat(out); !os.IsNotExist(serr) {
					t.Errorf("a failed write left %s", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := beton.Open(out, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.NumSamples() != uint64(len(tc.sizes)) {
				t.Fatalf("%d samples, want %d", r.NumSamples(), len(tc.sizes))
			}
			for i, want := range tc.sizes {
				col, err := r.Column(uint64(i), 0)
				if err != nil {
					t.Fatal(err)
				}
				w := int(binary.LittleEndian.Uint16(col[field.RGBWidthOff:]))
				h := int(binary.LittleEndian.Uint16(col[field.RGBHeightOff:]))
				if [2]int{w, h} != want {
					t.Errorf("sample %d stored %dx%d, want %dx%d", i, w, h, want[0], want[1])
				}
				lab, err := r.Column(uint64(i), 1)
				if err != nil {
					t.Fatal(err)
				}
				if got := int(int64(binary.LittleEndian.Uint64(lab))); got != f.Labels[i] {
					t.Errorf("sample %d label %d, want %d", i, got, f.Labels[i])
				}
			}
		})
	}
}

// BenchmarkWrite writes FFCV_GO_BENCH_FOLDER (an ImageFolder tree; 200
// synthetic 340×320 JPEGs when unset) at its own size, as the writer bench's
// fair setting does. Profile with -cpuprofile.
func BenchmarkWrite(b *testing.B) {
	root := os.Getenv("FFCV_GO_BENCH_FOLDER")
	if root == "" {
		files := map[string][]byte{}
		for i := 0; i < 200; i++ {
			files[fmt.Sprintf("c%d/%03d.jpg", i%4, i)] = photo(b, 340, 320, i)
		}
		root = tree(b, files)
	}
	f, err := Scan(root)
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "out.beton")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := f.Write(out, Options{Image: field.ImageOptions{WriteMode: "jpg", JPEGQuality: 90}, PageSize: 8 << 20,
			Workers: runtime.GOMAXPROCS(0)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(f.Files))/1e3, "µs/image")
}
