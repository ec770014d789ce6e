package yolo

import (
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestConvert(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"images", "labels"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		label *string // nil: no label file
		task  Format
		want  Item
		err   string
	}{
		{"box", ptr("1 0.5 0.5 0.25 0.5\n"), det, Item{Classes: []int{1}, Boxes: [][4]float64{{24, 8, 40, 24}}}, ""},
		{"missing", nil, det, Item{Missing: true, Classes: []int{}, Boxes: [][4]float64{}}, ""},
		{"empty", ptr(""), det, Item{Classes: []int{}, Boxes: [][4]float64{}}, ""},
		{"polygon", ptr("0 0.25 0.25 0.75 0.25 0.5 1\n"), seg,
			Item{Classes: []int{0}, Boxes: [][4]float64{{16, 8, 48, 32}}, Polygons: [][]float64{{16, 8, 48, 8, 32, 32}}}, ""},
		{"pose", ptr("0 0.5 0.5 0.5 0.5 0.25 0.5 2 1 1 0\n"), pose,
			Item{Classes: []int{0}, Boxes: [][4]float64{{16, 8, 48, 24}}, Keypoints: [][]float64{{16, 16, 2, 64, 32, 0}}}, ""},
		{"bad line", ptr("0 0.5 0.5 0.5 0.5\n5 0.5 0.5 0.5 0.5\n"), det, Item{}, "labels/bad line.txt: line 2: class id 5"},
	}
	var images []string
	for _, c := range cases {
		img := filepath.Join(dir, "images", c.name+".png")
		f, err := os.Create(img)
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, image.NewRGBA(image.Rect(0, 0, 64, 32))); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if c.label != nil {
			if err := os.WriteFile(LabelPath(img), []byte(*c.label), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		images = append(images, img)
	}
	if err := os.WriteFile(filepath.Join(dir, "labels", "orphan.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for k, it := range Convert(images, det, 3) { // in order, whatever the workers
		if it.Image != images[k] {
			t.Fatalf("item %d is %s, want %s", k, it.Image, images[k])
		}
	}
	for k, c := range cases {
		got := Convert(images[k:k+1], c.task, 1)[0]
		if c.err != "" {
			if !strings.Contains(got.Error, c.err) {
				t.Fatalf("%s: error %q, want %q", c.name, got.Error, c.err)
			}
			continue
		}
		c.want.Image, c.want.Label, c.want.Width, c.want.Height = images[k], LabelPath(images[k]), 64, 32
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	orphans, err := Orphans(images)
	if err != nil || !reflect.DeepEqual(orphans, []string{filepath.Join(dir, "labels", "orphan.txt")}) {
		t.Fatalf("orphans %v, %v", orphans, err)
	}
}

func ptr(s string) *string { return &s }

func TestOrientation(t *testing.T) {
	exif := func(order string, tag uint16, value uint16) string {
		le := order == "II"
		u16 := func(v uint16) string {
			if le {
				return string([]byte{byte(v), byte(v >> 8)})
			}
			return string([]byte{byte(v >> 8), byte(v)})
		}
		u32 := func(v uint32) string {
			if le {
				return string([]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
			}
			return string([]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		}
		tiff := order + u16(42) + u32(8) + u16(1) + u16(tag) + u16(3) + u32(1) + u16(value) + u16(0) + u32(0)
		seg := "Exif\x00\x00" + tiff
		n := len(seg) + 2
		return "\xff\xe1" + string([]byte{byte(n >> 8), byte(n)}) + seg
	}
	cases := []struct {
		name, data string
		want       int
	}{
		{"little endian", "\xff\xd8" + exif("II", 0x0112, 6) + "\xff\xda\x00\x02", 6},
		{"big endian", "\xff\xd8\xff\xe0\x00\x04ab" + exif("MM", 0x0112, 8), 8},
		{"upright", "\xff\xd8" + exif("II", 0x0112, 1), 1},
		{"other tag", "\xff\xd8" + exif("II", 0x0110, 6), 0},
		{"after the scan", "\xff\xd8\xff\xda\x00\x02" + exif("II", 0x0112, 6), 0},
		{"png", "\x89PNG\r\n\x1a\n", 0},
		{"truncated", "\xff\xd8" + exif("II", 0x0112, 6)[:20], 0},
	}
	for _, c := range cases {
		if got := orientation(strings.NewReader(c.data)); got != c.want {
			t.Errorf("%s: orientation %d, want %d", c.name, got, c.want)
		}
	}
}

func FuzzOrientation(f *testing.F) {
	f.Add([]byte("\xff\xd8\xff\xe1\x00\x10Exif\x00\x00II*\x00\x08\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if o := orientation(strings.NewReader(string(b))); o < 0 || o > 0xFFFF {
			t.Fatalf("orientation %d", o)
		}
	})
}

func TestResample(t *testing.T) {
	sq := []float64{0, 0, 4, 0, 4, 2, 0, 2} // perimeter 12: edges 4, 2, 4, 2
	for _, tc := range []struct {
		name string
		xy   []float64
		k    int
		want []float64
	}{
		{"same", sq, 4, sq},
		{"vertices kept, points by length", sq, 8,
			[]float64{0, 0, 2, 0, 4, 0, 4, 1, 4, 2, 2, 2, 0, 2, 0, 1}},
		{"fewer, by arc length", sq, 3, []float64{0, 0, 4, 0, 2, 2}},
		{"longest edges first", sq, 6, []float64{0, 0, 2, 0, 4, 0, 4, 2, 2, 2, 0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Resample(tc.xy, tc.k)
			if len(got) != 2*tc.k {
				t.Fatalf("%d values, want %d", len(got), 2*tc.k)
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
	// Every vertex stays; new points lie on the outline.
	got := Resample(sq, 8)
	for v := 0; v < 4; v++ {
		found := false
		for p := 0; p < 8; p++ {
			found = found || (got[2*p] == sq[2*v] && got[2*p+1] == sq[2*v+1])
		}
		if !found {
			t.Fatalf("vertex %d lost: %v", v, got)
		}
	}
	for p := 0; p < 8; p++ {
		x, y := got[2*p], got[2*p+1]
		if !(x == 0 || x == 4 || y == 0 || y == 2) {
			t.Fatalf("point (%g, %g) is off the outline", x, y)
		}
	}
}
