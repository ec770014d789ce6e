package rgb

import (
	"bytes"
	"encoding/json"
	"strings"
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
		want := lbGeom{nw: c.nw, nh: c.nh, left: c.left, top: c.top, rx: c.rx, ry: c.ry, oh: c.outH, ow: c.outW}
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

// TestLetterboxRectGeometry: with rect batches a sample is letterboxed to
// its batch's shape, its long side at most imgsz (Ultralytics' load_image),
// at the top-left of the largest shape; a sample out of the rect order is
// refused.
func TestLetterboxRectGeometry(t *testing.T) {
	l, err := parseLetterbox(json.RawMessage(`{"size": [640, 640], "scaleup": false,
		"rect": {"batch_size": 2, "imgsz": 640, "stride": 32, "pad": 0.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	l.rect = &rectPlan{imgsz: 640, order: []uint64{1, 0}, shape: [][2]int{{512, 672}, {512, 672}}}
	l.oh, l.ow = 512, 672
	// 1000×750 (aspect 0.75): to 640×480, padded to 672×512 (16 each side)
	g := l.geomOf(0, 1000, 750)
	if want := (lbGeom{nw: 640, nh: 480, left: 16, top: 16, rx: 0.64, ry: 0.64, oh: 512, ow: 672}); g != want {
		t.Fatalf("%+v, want %+v", g, want)
	}
	c := pipeline.NewCtx()
	c.Sample, c.Pos = 0, 1
	if err := l.checkRect(c); err != nil {
		t.Fatal(err)
	}
	c.Pos = 0
	if err := l.checkRect(c); err == nil || !strings.Contains(err.Error(), "OrderOption.RECT") {
		t.Fatalf("sample 0 at position 0: %v", err)
	}
	if _, err := parseLetterbox(json.RawMessage(`{"size": [64, 64], "rect": {"batch_size": 0, "imgsz": 64, "stride": 32}}`)); err == nil {
		t.Fatal("batch_size 0 accepted")
	}
}
