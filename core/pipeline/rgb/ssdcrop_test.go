package rgb

import (
	"math"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

func TestIoU(t *testing.T) {
	for _, c := range []struct {
		a, b [4]float64
		want float64
	}{
		{[4]float64{0, 0, 10, 10}, [4]float64{0, 0, 10, 10}, 1},
		{[4]float64{0, 0, 10, 10}, [4]float64{5, 0, 15, 10}, 50.0 / 150},
		{[4]float64{0, 0, 10, 10}, [4]float64{10, 0, 20, 10}, 0},
		{[4]float64{0, 0, 4, 4}, [4]float64{0, 0, 8, 8}, 0.25},
	} {
		if got := iou(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("iou(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestIoUCropDraws: every crop torchvision's constraints allow -- sides a
// factor in [min_scale, max_scale] of the image's, aspect in range, a box
// centre strictly inside with IoU >= some option -- and the whole image
// kept some of the time (the option 1).
func TestIoUCropDraws(t *testing.T) {
	const w, h = 40, 30
	r := optest.ReaderWithBoxes(t, w, h)
	env := pipeline.Env{Reader: r, Field: optest.ImageField, Desc: r.Fields[optest.ImageField]}
	op, err := pipeline.New(env, optest.Spec(t, "rgb_iou_crop", map[string]any{"size": []int{8, 8}, "boxes": "boxes",
		"min_scale": 0.3, "max_scale": 1.0, "min_aspect_ratio": 0.5, "max_aspect_ratio": 2.0, "trials": 40}))
	if err != nil {
		t.Fatal(err)
	}
	d := op.(*iouCrop)
	boxes := [][4]float64{{4, 3, 16, 13.5}, {20, 10.5, 36, 27}}
	crops, whole := 0, 0
	for pos := uint64(0); pos < 300; pos++ {
		c := pipeline.NewCtx()
		c.Seed, c.Pos, c.Sample = 1, pos, pos%2
		c.Read = func(f int) ([]byte, []byte, error) { return r.Read(c.Sample, f) }
		rc, ok, err := d.draw(c, 0, w, h)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			whole++
			continue
		}
		crops++
		if rc.Min.X < 0 || rc.Min.Y < 0 || rc.Max.X > w || rc.Max.Y > h || rc.Dx() < int(0.3*w) || rc.Dy() < int(0.3*h) {
			t.Fatalf("sample %d: crop %v out of range", pos, rc)
		}
		if ar := float64(rc.Dx()) / float64(rc.Dy()); ar < 0.5 || ar > 2 {
			t.Fatalf("sample %d: crop %v has aspect %v", pos, rc, ar)
		}
		centred := false
		for _, b := range boxes {
			cx, cy := (b[0]+b[2])/2, (b[1]+b[3])/2
			centred = centred || float64(rc.Min.X) < cx && cx < float64(rc.Max.X) && float64(rc.Min.Y) < cy && cy < float64(rc.Max.Y)
		}
		if !centred {
			t.Fatalf("sample %d: crop %v holds no box centre", pos, rc)
		}
	}
	if crops < 100 || whole < 10 {
		t.Fatalf("%d crops, %d whole images in 300 samples", crops, whole)
	}
	for _, c := range []struct{ boxes, want string }{{"nope", "no field"}, {"label", "not a RaggedArrayField"}, {"", "missing"}} {
		_, err := pipeline.New(env, optest.Spec(t, "rgb_iou_crop", map[string]any{"size": []int{8, 8}, "boxes": c.boxes,
			"min_scale": 0.3, "max_scale": 1.0, "min_aspect_ratio": 0.5, "max_aspect_ratio": 2.0, "trials": 40}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("boxes %q: %v, want an error about %q", c.boxes, err, c.want)
		}
	}
}

func TestZoomOutDraws(t *testing.T) {
	const w, h = 40, 30
	for _, p := range []float64{0, 0.5, 1} {
		op := optest.NewOp(t, "zoom_out", map[string]any{"fill": []int{7}, "side_range": []float64{1.5, 3}, "p": p})
		z := op.(*zoomOut)
		if _, err := z.Out(optest.ImgSpec(h, w, 3)); err != nil {
			t.Fatal(err)
		}
		zoomed := 0
		for pos := uint64(0); pos < 100; pos++ {
			c := pipeline.NewCtx()
			c.Pos = pos
			l, top, cw, ch := z.draw(c, 0).place(w, h)
			if cw == w && ch == h {
				continue
			}
			zoomed++
			if cw < int(1.5*w) || cw > 3*w || ch < int(1.5*h) || ch > 3*h || l < 0 || top < 0 || l+w > cw || top+h > ch {
				t.Fatalf("p=%v, sample %d: image at (%d, %d) of a %dx%d canvas", p, pos, l, top, cw, ch)
			}
		}
		if want := int(100 * p); zoomed < want-20 || zoomed > want+20 {
			t.Fatalf("p=%v: %d of 100 zoomed out", p, zoomed)
		}
	}
}
