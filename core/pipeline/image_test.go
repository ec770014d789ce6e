package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
)

// A flip_h after a crop decoder is fused into the decoder's resize; the
// result must be byte-identical to running the two stages one by one, for
// JPEG and raw samples, every flip probability and both crop kinds, and a
// random operation after the flip must draw what it drew before.
func TestFuseFlipMatchesStages(t *testing.T) {
	const w, h = 120, 90
	pix, enc, col := testImage(t, w, h)
	samples := []struct {
		name string
		col  []byte
		heap []byte
	}{{"jpeg", col(field.ModeJPEG), enc}, {"raw", col(field.ModeRaw), pix}}
	for _, dec := range []struct {
		name string
		args map[string]any
	}{
		{"rgb_rrc", map[string]any{"size": []int{32, 40}, "scale": []float64{0.08, 1}, "ratio": []float64{0.75, 4.0 / 3}}},
		{"rgb_center", map[string]any{"size": []int{24, 24}, "ratio": 0.875}},
	} {
		for _, p := range []float64{0, 0.5, 1} {
			build := func() []Op {
				d, err := newCropRGB(dec.name == "rgb_rrc")(Env{Desc: field.Desc{Type: field.RGBImage}}, mustJSON(t, dec.args))
				if err != nil {
					t.Fatal(err)
				}
				return []Op{
					d,
					newOp(t, "flip_h", map[string]any{"p": p}),
					newOp(t, "brightness", map[string]any{"magnitude": 0.5, "p": 0.5}),
				}
			}
			stages, fused := build(), build()
			fuse(fused, []int{0, 1, 2})
			if _, ok := fused[1].(Fused); !ok {
				t.Fatalf("%s: flip_h was not fused", dec.name)
			}
			for _, s := range samples {
				flipped := 0
				for pos := uint64(0); pos < 40; pos++ {
					want := runOps(t, stages, s.col, s.heap, pos)
					got := runOps(t, fused, s.col, s.heap, pos)
					if !slices.Equal(got, want) {
						t.Fatalf("%s %s p=%v pos %d: fused result differs", dec.name, s.name, p, pos)
					}
					if !slices.Equal(want, runOps(t, stages[:1], s.col, s.heap, pos)) {
						flipped++
					}
				}
				if p == 1 && flipped < 30 {
					t.Errorf("%s %s p=1: only %d of 40 samples changed", dec.name, s.name, flipped)
				}
			}
		}
	}
}

// runOps runs ops one by one in a fresh context (program semantics: op i
// draws with key i), with in and out the same buffer for in-place stages.
func runOps(t *testing.T, ops []Op, col, heap []byte, pos uint64) []byte {
	t.Helper()
	c := NewCtx()
	defer c.Close()
	c.Seed, c.Pos, c.Col, c.Heap = 7, pos, col, heap
	var in Spec
	var cur []byte
	for i, op := range ops {
		out, err := op.Out(in)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]byte, out.Bytes())
		if err := op.Run(c, i, cur, dst); err != nil {
			t.Fatal(err)
		}
		cur, in = dst, out
	}
	return cur
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testImage returns a w x h test pattern, its JPEG at quality 90, and the
// RGBImageField column of either (by mode) for those sizes.
func testImage(t *testing.T, w, h int) (pix, enc []byte, col func(mode byte) []byte) {
	t.Helper()
	pix = make([]byte, w*h*3)
	for i := range pix {
		pix[i] = byte(i*31 + i/(w*3)*17)
	}
	enc, err := jpeg.Encode(pix, w, h, 90)
	if err != nil {
		t.Fatal(err)
	}
	col = func(mode byte) []byte {
		c := make([]byte, 13)
		c[field.RGBModeOff] = mode
		binary.LittleEndian.PutUint16(c[field.RGBWidthOff:], uint16(w))
		binary.LittleEndian.PutUint16(c[field.RGBHeightOff:], uint16(h))
		return c
	}
	return pix, enc, col
}
