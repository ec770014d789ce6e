package ops

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// CutMix after a mosaic, per position: the same output and report twice
// (its draws come from the sample's key alone); where it applies, the area
// overlaps none of the boxes the sample's own tiles show (those
// Ultralytics' box_candidates keeps), the partner's
// pieces show only rows whose boxes lie inside the area, and the pixels
// inside the area are the partner's mosaic (run at PartnerPos), those
// outside the sample's own.
func TestCutMixFollowsRun(t *testing.T) {
	r := mosaicReader(t)
	env := pipeline.Env{Reader: r, Field: mImage, Desc: r.Fields[mImage]}
	mosaic := optest.Spec(t, "mosaic", map[string]any{"imgsz": 12, "n": 4, "seed": 2})
	for _, tc := range []struct {
		name     string
		args     map[string]any
		minCount int  // positions where it must apply
		mixUp    bool // a MixUp before it, which its partner skips
	}{
		{"p=1, 3 areas", map[string]any{"p": 1, "beta": 1, "num_areas": 3}, 1, false},
		{"p=1, 10 areas", map[string]any{"p": 1, "beta": 0.5, "num_areas": 10}, 1, false},
		{"p=0", map[string]any{"p": 0, "beta": 1, "num_areas": 3}, 0, false},
		{"after MixUp", map[string]any{"p": 1, "beta": 1, "num_areas": 10}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []json.RawMessage{mosaic}
			if tc.mixUp {
				prefix = append(prefix, optest.Spec(t, "yolo_mixup", map[string]any{"p": 0.5, "seed": 3}))
			}
			args := map[string]any{"boxes": mBoxes, "seed": 5,
				"geometry": map[string]any{"image": mImage, "ops": prefix}}
			for k, v := range tc.args {
				args[k] = v
			}
			cut := optest.Spec(t, "cut_mix", args)
			specs := append(slices.Clone(prefix), cut)
			partnerOps, err := pipeline.Build(r, mImage, specs[:1])
			if err != nil {
				t.Fatal(err)
			}
			p, err := pipeline.Build(r, mImage, specs)
			if err != nil {
				t.Fatal(err)
			}
			before, err := pipeline.Build(r, mImage, prefix)
			if err != nil {
				t.Fatal(err)
			}
			g, err := pipeline.NewGeometry(env, pipeline.GeometrySpec{Image: mImage, Ops: specs})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := pipeline.New(env, cut)
			if err != nil {
				t.Fatal(err)
			}
			key := pipeline.SeedKey(5)
			out, again := make([]byte, p.Out.Bytes()), make([]byte, p.Out.Bytes())
			own, other := make([]byte, before.Out.Bytes()), make([]byte, before.Out.Bytes())
			side, applied := 24, 0
			for pos := uint64(0); pos < 40; pos++ {
				c := mosaicCtx(r, mImage, pos, 0)
				var rp, rp2 [6]float32
				rep.(pipeline.Reporter).Report(c, key, rp[:])
				rep.(pipeline.Reporter).Report(c, key, rp2[:])
				if err := p.Run(c, &pipeline.Scratch{}, nil, out); err != nil {
					t.Fatal(err)
				}
				if err := p.Run(mosaicCtx(r, mImage, pos, 0), &pipeline.Scratch{}, nil, again); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, again) || rp != rp2 {
					t.Fatalf("position %d: two runs differ (reports %v, %v)", pos, rp, rp2)
				}
				pieces, err := g.Pieces(c, r, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := before.Run(c, &pipeline.Scratch{}, nil, own); err != nil {
					t.Fatal(err)
				}
				if rp[0] == 0 {
					if pieces[len(pieces)-1].Rows != nil || !bytes.Equal(out, own) {
						t.Fatalf("position %d: not applied, yet %d pieces or other pixels", pos, len(pieces))
					}
					continue
				}
				applied++
				a := [4]float64{float64(rp[2]), float64(rp[3]), float64(rp[4]), float64(rp[5])}
				nOwn := len(pieces) - 1
				for nOwn > 0 && pieces[nOwn].Rows != nil {
					nOwn--
				}
				nOwn++
				for _, pc := range pieces[:nOwn] {
					b, ref := pc.Map.Box(boxOf(mosaicBox(int(pc.Sample))))
					w, h := b[2]-b[0], b[3]-b[1]
					seen := w > 2 && h > 2 && w*h > 0.1*ref && max(w/h, h/w) < 100 // box_candidates
					if seen && min(a[2], b[2]) > max(a[0], b[0]) && min(a[3], b[3]) > max(a[1], b[1]) {
						t.Errorf("position %d: area %v overlaps own box %v of sample %d", pos, a, b, pc.Sample)
					}
				}
				if nOwn == len(pieces) {
					t.Fatalf("position %d: applied, yet no partner piece", pos)
				}
				for _, pc := range pieces[nOwn:] {
					if len(pc.Rows) == 0 {
						t.Errorf("position %d: partner piece without rows", pos)
					}
					b, _ := pc.Map.Box(boxOf(mosaicBox(int(pc.Sample))))
					if b[0] < a[0] || b[1] < a[1] || b[2] > a[2] || b[3] > a[3] || b[2] <= b[0] || b[3] <= b[1] {
						t.Errorf("position %d: partner box %v not inside area %v", pos, b, a)
					}
				}
				pc := mosaicCtx(r, mImage, pos, 0)
				pc.Sample, pc.Pos = uint64(rp[1]), pipeline.PartnerPos(pos, key)
				pc.Col, pc.Heap, _ = r.Read(pc.Sample, mImage)
				pc.Read = func(f int) ([]byte, []byte, error) { return r.Read(pc.Sample, f) }
				if err := partnerOps.Run(pc, &pipeline.Scratch{}, nil, other); err != nil {
					t.Fatal(err)
				}
				for y := 0; y < side; y++ {
					for x := 0; x < side; x++ {
						want := own
						if float64(x) >= a[0] && float64(x) < a[2] && float64(y) >= a[1] && float64(y) < a[3] {
							want = other
						}
						i := (y*side + x) * 3
						if !bytes.Equal(out[i:i+3], want[i:i+3]) {
							t.Fatalf("position %d: pixel (%d, %d) is %v, want %v (area %v)", pos, x, y, out[i:i+3], want[i:i+3], a)
						}
					}
				}
			}
			t.Logf("applied at %d of 40 positions", applied)
			if applied < tc.minCount || (tc.minCount == 0 && applied > 0) {
				t.Errorf("applied at %d of 40 positions", applied)
			}
		})
	}
}

func boxOf(b [4]float32) [4]float64 {
	return [4]float64{float64(b[0]), float64(b[1]), float64(b[2]), float64(b[3])}
}

// CutMix's arguments are checked when it is built.
func TestCutMixRefusals(t *testing.T) {
	geo := map[string]any{"image": 0, "ops": []any{map[string]any{"op": "rgb_simple"}}}
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "cut_mix", Args: map[string]any{"p": 2, "beta": 1, "num_areas": 3, "boxes": 2, "geometry": geo}, Want: "p 2 must be in [0, 1]"},
		{Name: "cut_mix", Args: map[string]any{"p": 0.5, "beta": 0, "num_areas": 3, "boxes": 2, "geometry": geo}, Want: "beta must be"},
		{Name: "cut_mix", Args: map[string]any{"p": 0.5, "beta": 1, "num_areas": 0, "boxes": 2, "geometry": geo}, Want: "num_areas must be"},
		{Name: "cut_mix", Args: map[string]any{"p": 0.5, "beta": 1, "num_areas": 3}, Want: "needs the boxes field"},
	})
	r := mosaicReader(t)
	env := pipeline.Env{Reader: r, Field: mImage, Desc: r.Fields[mImage]}
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"boxes not boxes", map[string]any{"boxes": mLabels}, "must be xyxy boxes"},
		{"polygons not polygons", map[string]any{"boxes": mBoxes, "polygons": mBoxes}, "must be polygons"},
	} {
		args := map[string]any{"p": 0.5, "beta": 1, "num_areas": 3,
			"geometry": map[string]any{"image": mImage, "ops": []any{map[string]any{"op": "rgb_simple"}}}}
		for k, v := range tc.args {
			args[k] = v
		}
		if _, err := pipeline.New(env, optest.Spec(t, "cut_mix", args)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
	}
}

// The map that keeps CutMix's partner rows moves with the steps after it,
// as the rows' own map does: both end on the output's frame, scaled alike.
func TestCutMixFilterFollowsLaterSteps(t *testing.T) {
	r := mosaicReader(t)
	env := pipeline.Env{Reader: r, Field: mImage, Desc: r.Fields[mImage]}
	mosaic := optest.Spec(t, "mosaic", map[string]any{"imgsz": 12, "n": 4, "seed": 2})
	cut := optest.Spec(t, "cut_mix", map[string]any{"p": 1, "beta": 0.5, "num_areas": 10, "boxes": mBoxes, "seed": 5,
		"geometry": map[string]any{"image": mImage, "ops": []json.RawMessage{mosaic}}})
	after := optest.Spec(t, "letterbox", map[string]any{"size": []int{48, 48}, "center": true, "fill": []int{114}})
	g, err := pipeline.NewGeometry(env, pipeline.GeometrySpec{Image: mImage, Ops: []json.RawMessage{mosaic, cut, after}})
	if err != nil {
		t.Fatal(err)
	}
	cutPieces := 0
	for pos := uint64(0); pos < 40; pos++ {
		pieces, err := g.Pieces(mosaicCtx(r, mImage, pos, 0), r, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, pc := range pieces {
			if pc.Filter == nil {
				continue
			}
			cutPieces++
			f, m := pc.Filter, pc.Map
			if f.W != m.W || f.H != m.H || f.SX != m.SX || f.SY != m.SY {
				t.Fatalf("position %d: filter map %+v, rows' map %+v", pos, *f, m)
			}
		}
	}
	if cutPieces == 0 {
		t.Fatal("no cut partner pieces")
	}
}
