package rgb

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// TestLetterboxGeometry: sizes and padding as Ultralytics' LetterBox gives
// them (Python's round, half to even; dw/2 - 0.1 for the left and top).
func TestLetterboxGeometry(t *testing.T) {
	for _, c := range []struct {
		args       string
		w, h       int
		nw, nh     int
		left, top  int
		rx, ry     float64
		outW, outH int
	}{
		{`{"size": [640, 640]}`, 640, 480, 640, 480, 0, 80, 1, 1, 640, 640},
		{`{"size": [640, 640]}`, 500, 375, 640, 480, 0, 80, 1.28, 1.28, 640, 640},
		{`{"size": [640, 640]}`, 333, 500, 426, 640, 107, 0, 1.28, 1.28, 640, 640},
		// one pixel of padding: all of it below (round(0.4) = 0)
		{`{"size": [100, 100]}`, 101, 100, 100, 99, 0, 0, 100.0 / 101, 100.0 / 101, 100, 100},
		{`{"size": [64, 64]}`, 375, 250, 64, 43, 0, 10, 64.0 / 375, 64.0 / 375, 64, 64},
		// 2.5 rounds to 2, as Python's round
		{`{"size": [2, 100]}`, 25, 20, 2, 2, 49, 0, 0.1, 0.1, 100, 2},
		{`{"size": [40, 40], "scaleup": false}`, 10, 5, 10, 5, 15, 17, 1, 1, 40, 40},
		{`{"size": [40, 40], "center": false}`, 10, 5, 40, 20, 0, 0, 4, 4, 40, 40},
		{`{"size": [30, 40], "scale_fill": true}`, 10, 5, 40, 30, 0, 0, 4, 6, 40, 30},
	} {
		l, err := parseLetterbox(json.RawMessage(c.args))
		if err != nil {
			t.Fatal(err)
		}
		g := l.geom(c.w, c.h)
		want := lbGeom{nw: c.nw, nh: c.nh, left: c.left, top: c.top, rx: c.rx, ry: c.ry}
		if g != want || l.ow != c.outW || l.oh != c.outH {
			t.Errorf("%s on %dx%d: %+v in %dx%d, want %+v in %dx%d", c.args, c.w, c.h, g, l.ow, l.oh, want, c.outW, c.outH)
		}
	}
}

// TestLetterboxPixels: the image's span holds the INTER_LINEAR resize and
// every other pixel is the fill.
func TestLetterboxPixels(t *testing.T) {
	const w, h = 37, 23
	src := make([]byte, w*h*3)
	for i := range src {
		src[i] = byte(i*7 + i/3)
	}
	for _, args := range []string{`{"size": [50, 50], "fill": [1, 2, 3]}`, `{"size": [20, 60], "center": false}`,
		`{"size": [30, 30], "scaleup": false}`, `{"size": [23, 37]}`} {
		l, err := parseLetterbox(json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		g := l.geom(w, h)
		out := make([]byte, l.ow*l.oh*3)
		l.run(pipeline.NewCtx(), src, w, h, w*3, out)
		res := make([]byte, g.nw*g.nh*3)
		var rs imgproc.Resizer
		rs.ResizeLinear(res, g.nw, g.nh, src, w, h, w*3, 3)
		for y := 0; y < l.oh; y++ {
			for x := 0; x < l.ow; x++ {
				px := out[(y*l.ow+x)*3:][:3]
				want := l.fill[:]
				if x >= g.left && x < g.left+g.nw && y >= g.top && y < g.top+g.nh {
					want = res[((y-g.top)*g.nw+x-g.left)*3:][:3]
				}
				if !bytes.Equal(px, want) {
					t.Fatalf("%s: pixel (%d, %d) is %v, want %v", args, x, y, px, want)
				}
			}
		}
	}
}

func TestLetterboxRefusesAuto(t *testing.T) {
	if _, err := parseLetterbox(json.RawMessage(`{"size": [64, 64], "auto": true}`)); err == nil {
		t.Fatal("auto=True accepted")
	}
}
