package transform

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// randomHSV is Ultralytics' RandomHSV (8.3.79 on): gains g drawn from
// U(-1, 1)·(hgain, sgain, vgain), then each pixel's OpenCV 8-bit HSV goes
// through lookup tables -- hue (x + 180·g_h) mod 180, saturation and value
// clip(x·(1 + g), 0, 255), truncated -- and back to RGB. With every gain 0
// it leaves images alone, as Ultralytics does. Each gain is drawn as a
// float32, so the gains it reports are the ones it used, to the bit.
type randomHSV struct {
	pipeline.SameImage
	pipeline.PhotometricOp
	gains [3]float64
	w     int
}

func newRandomHSV(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		HGain float64 `json:"hgain"`
		SGain float64 `json:"sgain"`
		VGain float64 `json:"vgain"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	g := [3]float64{a.HGain, a.SGain, a.VGain}
	for i, name := range []string{"hgain", "sgain", "vgain"} {
		if !(g[i] >= 0 && g[i] <= 1) {
			return nil, fmt.Errorf("%s %v must be in [0, 1]", name, g[i])
		}
	}
	return &randomHSV{gains: g}, nil
}

func (o *randomHSV) Out(in pipeline.Spec) (pipeline.Spec, error) {
	if err := pipeline.NeedImage(in); err != nil {
		return in, err
	}
	if in.Shape[2] != 3 {
		return in, fmt.Errorf("needs RGB images, got %d channels", in.Shape[2])
	}
	o.w = in.Shape[1]
	return in, nil
}

// draw is the sample's gains (without Ultralytics' + 1): Run and Report
// both read it.
func (o *randomHSV) draw(c *pipeline.Ctx, key int) [3]float64 {
	r := c.Rand(key)
	var g [3]float64
	for i := range g {
		g[i] = float64(float32((2*r.Float64() - 1) * o.gains[i]))
	}
	return g
}

// Reports: the gains (g_h, g_s, g_v) drawn for the sample.
func (o *randomHSV) Reports() int { return 3 }

func (o *randomHSV) Report(c *pipeline.Ctx, key int, dst []float32) {
	for i, g := range o.draw(c, key) {
		dst[i] = float32(g)
	}
}

// hsvTables are Ultralytics' lookup tables for gains g.
func hsvTables(g [3]float64) (h, s, v [256]byte) {
	for i := range h {
		x := float64(i)
		// numpy's float % is floored: the result is in [0, 180).
		hv := math.Mod(x+g[0]*180, 180)
		if hv < 0 {
			hv += 180
		}
		h[i] = byte(hv)
		s[i] = byte(max(0, min(255, x*(g[1]+1))))
		v[i] = byte(max(0, min(255, x*(g[2]+1))))
	}
	s[0] = 0
	return h, s, v
}

func (o *randomHSV) Run(c *pipeline.Ctx, op int, in, out []byte) error {
	pipeline.CopyIfNeeded(out, in)
	if o.gains == [3]float64{} {
		return nil
	}
	h, s, v := hsvTables(o.draw(c, op))
	imgproc.HSVLUT(out, o.w, &h, &s, &v)
	return nil
}
