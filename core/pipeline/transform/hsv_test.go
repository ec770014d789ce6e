package transform

import (
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// TestHSVTables: Ultralytics' tables, numpy's arithmetic -- floored modulo
// for the hue (a negative shift wraps to the top), clip then truncation.
func TestHSVTables(t *testing.T) {
	for _, c := range []struct {
		g       [3]float64
		x       int
		h, s, v byte
	}{
		{[3]float64{0, 0, 0}, 200, 20, 200, 200},   // x+0 mod 180
		{[3]float64{0.01, 0, 0}, 179, 0, 179, 179}, // 179 + 1.8 wraps
		{[3]float64{-0.01, 0, 0}, 0, 178, 0, 0},    // -1.8 mod 180 = 178.2
		{[3]float64{-0.01, 0, 0}, 1, 179, 1, 1},    // -0.8 mod 180
		{[3]float64{0, 0.5, -0.5}, 101, 101, 151, 50},
		{[3]float64{0, 0.9, 0.9}, 200, 20, 255, 255}, // clipped
		{[3]float64{0, 0.9, 0}, 0, 0, 0, 0},
	} {
		h, s, v := hsvTables(c.g)
		if h[c.x] != c.h || s[c.x] != c.s || v[c.x] != c.v {
			t.Errorf("gains %v, x %d: (%d, %d, %d), want (%d, %d, %d)", c.g, c.x, h[c.x], s[c.x], v[c.x], c.h, c.s, c.v)
		}
	}
}

// TestRandomHSVRunsWhatItReports: each sample's pixels are HSVLUT at the
// gains Report gives, the gains lie within the given ones, and gains of 0
// leave the image alone.
func TestRandomHSVRunsWhatItReports(t *testing.T) {
	const h, w = 5, 40
	in := rampImage(h, w, 3)
	args := map[string]any{"hgain": 0.1, "sgain": 0.7, "vgain": 0.4, "key": 3}
	op := optest.NewOp(t, "random_hsv", args)
	spec := optest.ImgSpec(h, w, 3)
	if _, err := op.Out(spec); err != nil {
		t.Fatal(err)
	}
	rep := op.(pipeline.Reporter)
	seen := map[float32]bool{}
	for pos := uint64(0); pos < 20; pos++ {
		got := optest.RunKey(t, op, spec, in, pos, 3)
		c := pipeline.NewCtx()
		c.Seed, c.Pos = 7, pos // RunKey's seed
		var g [3]float32
		rep.Report(c, 3, g[:])
		for i, lim := range []float32{0.1, 0.7, 0.4} {
			if g[i] < -lim || g[i] > lim {
				t.Fatalf("sample %d: gain %d is %v, outside ±%v", pos, i, g[i], lim)
			}
		}
		seen[g[1]] = true
		lh, ls, lv := hsvTables([3]float64{float64(g[0]), float64(g[1]), float64(g[2])})
		want := slices.Clone(in)
		imgproc.HSVLUT(want, w, &lh, &ls, &lv)
		if !slices.Equal(got, want) {
			t.Fatalf("sample %d: the pixels are not those of the reported gains %v", pos, g)
		}
	}
	if len(seen) < 10 {
		t.Fatalf("%d different gains in 20 samples", len(seen))
	}
	zero := optest.NewOp(t, "random_hsv", map[string]any{"hgain": 0, "sgain": 0, "vgain": 0})
	if _, got := optest.Apply(t, zero, spec, in, 1, 0); !slices.Equal(got, in) {
		t.Fatal("gains of 0 changed the image")
	}
	if _, err := pipeline.New(pipeline.Env{}, optest.Spec(t, "random_hsv", map[string]any{"hgain": 1.5})); err == nil {
		t.Fatal("hgain 1.5 accepted")
	}
}
