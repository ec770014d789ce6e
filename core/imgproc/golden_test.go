package imgproc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// golden mirrors testdata/golden.json, written by testdata/gen_golden.py.
type golden struct {
	OpenCV  string `json:"opencv"`
	Sources map[string]struct {
		W, H, C int
	} `json:"sources"`
	Cases []struct {
		Name   string `json:"name"`
		Src    string `json:"src"`
		DW, DH int
	} `json:"cases"`
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// diffStats returns the largest absolute difference and how many bytes differ.
func diffStats(a, b []byte) (maxDiff, n int) {
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		if d > 0 {
			n++
		}
		maxDiff = max(maxDiff, d)
	}
	return maxDiff, n
}

// TestResizeAreaGolden compares against cv2.resize(..., INTER_AREA). The
// target is ±1 (OpenCV's SIMD and scalar tails round ties differently); any
// larger difference is a bug.
func TestResizeAreaGolden(t *testing.T) {
	var g golden
	if err := json.Unmarshal(readTestdata(t, "golden.json"), &g); err != nil {
		t.Fatal(err)
	}
	var rs Resizer // shared on purpose: exercises table caching across shapes
	for _, c := range g.Cases {
		t.Run(c.Name, func(t *testing.T) {
			s := g.Sources[c.Src]
			src := readTestdata(t, c.Src+".src")
			want := readTestdata(t, c.Name+".out")
			got := make([]byte, c.DW*c.DH*s.C)
			rs.ResizeArea(got, c.DW, c.DH, src, s.W, s.H, s.W*s.C, s.C)
			md, n := diffStats(got, want)
			t.Logf("%dx%dx%d -> %dx%d: max diff %d, %d of %d bytes differ (OpenCV %s)",
				s.W, s.H, s.C, c.DW, c.DH, md, n, len(want), g.OpenCV)
			if md > 1 {
				t.Errorf("max diff %d vs OpenCV, want <= 1", md)
			}
			// The one-shot function must agree with the cached Resizer.
			again := make([]byte, len(got))
			ResizeArea(again, c.DW, c.DH, src, s.W, s.H, s.W*s.C, s.C)
			if md, _ := diffStats(got, again); md != 0 {
				t.Errorf("ResizeArea and Resizer.ResizeArea differ by %d", md)
			}
		})
	}
}

// TestResizeLinearGolden compares against cv2.resize(..., INTER_LINEAR)
// (testdata/gen_linear.py): equal to the byte, edge rows included, with one
// Resizer across shapes so cached tables of the other interpolation or
// geometry are never reused.
func TestResizeLinearGolden(t *testing.T) {
	var g golden
	if err := json.Unmarshal(readTestdata(t, "golden.json"), &g); err != nil {
		t.Fatal(err)
	}
	var lin golden
	if err := json.Unmarshal(readTestdata(t, "golden_linear.json"), &lin); err != nil {
		t.Fatal(err)
	}
	var rs Resizer
	for _, c := range lin.Cases {
		t.Run(c.Name, func(t *testing.T) {
			s := g.Sources[c.Src]
			src := readTestdata(t, c.Src+".src")
			want := readTestdata(t, c.Name+".out")
			got := make([]byte, c.DW*c.DH*s.C)
			rs.ResizeArea(got, c.DW, c.DH, src, s.W, s.H, s.W*s.C, s.C) // fills the cache with area tables
			rs.ResizeLinear(got, c.DW, c.DH, src, s.W, s.H, s.W*s.C, s.C)
			if md, n := diffStats(got, want); md != 0 {
				t.Errorf("%dx%dx%d -> %dx%d: max diff %d, %d of %d bytes differ from OpenCV %s",
					s.W, s.H, s.C, c.DW, c.DH, md, n, len(want), lin.OpenCV)
			}
		})
	}
}
