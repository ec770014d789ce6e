package ops

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// placeArgs are the arguments each Geometric operation is held to its Place
// with (one or more sets; a set with "seed" runs only seeded). Every
// registered operation that builds for an RGBImageField and is Geometric
// must be here: one added later without an entry fails TestPlaceFollowsRun.
var placeArgs = map[string][]map[string]any{
	"rgb_simple": {{}},
	"rgb_pad":    {{}},
	"rgb_rrc": {
		{"size": []int{20, 24}, "scale": []float64{0.2, 1}, "ratio": []float64{0.75, 1.33}},
		{"size": []int{20, 24}, "scale": []float64{0.2, 0.5}, "ratio": []float64{0.75, 1.33}, "seed": 9, "second_seed": 4},
	},
	"rgb_center":     {{"size": []int{20, 20}, "ratio": 0.8}},
	"rgb_corner":     {{"size": []int{16, 16}, "ratio": 0.6, "corner": "top_right"}, {"size": []int{18, 14}, "ratio": 0.7, "corner": "bottom_left"}},
	"rgb_resize_pad": {{"size": []int{24, 28}, "scale": []float64{0.5, 1}, "fill": []int{0, 0, 0}}},
	"rgb_letterbox": {
		// fill 0: the test follows the marker's brightness.
		{"size": []int{24, 28}, "fill": []int{0}}, {"size": []int{20, 36}, "scaleup": false, "center": false, "fill": []int{0}},
		{"size": []int{24, 24}, "scale_fill": true}, {"size": []int{50, 30}, "fill": []int{0, 0, 0}},
	},
	"rgb_iou_crop": {
		{"size": []int{24, 20}, "boxes": "boxes", "min_scale": 0.3, "max_scale": 1.0, "min_aspect_ratio": 0.5,
			"max_aspect_ratio": 2.0, "trials": 40},
		{"size": []int{30, 40}, "boxes": "boxes", "min_scale": 0.5, "max_scale": 0.9, "min_aspect_ratio": 0.5,
			"max_aspect_ratio": 2.0, "trials": 5, "sampler_options": []float64{0, 0.3}, "seed": 3},
	},
	"zoom_out": {
		{"fill": []int{0}, "side_range": []float64{1, 2.5}, "p": 0.7},
		{"fill": []int{0, 0, 0}, "side_range": []float64{1.5, 3}, "p": 1, "size": []int{20, 24}},
	},
	"letterbox":   {{"size": []int{24, 28}, "fill": []int{0}}, {"size": []int{26, 20}, "center": false, "fill": []int{0}}},
	"rrc":         {{"size": []int{20, 24}, "scale": []float64{0.2, 1}, "ratio": []float64{0.75, 1.33}}},
	"center_crop": {{"size": []int{20, 20}, "ratio": 0.8}},
	"corner_crop": {{"size": []int{16, 16}, "ratio": 0.6, "corner": "bottom_right"}},
	"flip_h":      {{"p": 0.5}},
	"flip_v":      {{"p": 0.5}},
	"translate":   {{"padding": 6, "fill": []int{0, 0, 0}}},
	"random_crop": {{"size": []int{24, 30}, "padding": 4}},
	"random_perspective": {
		{"degrees": 10, "translate": 0.1, "scale": 0.3, "shear": 5},
		{"degrees": 5, "scale": 0.2, "perspective": 0.001, "border": []int{-4, 3}, "fill": []int{9, 8, 7}},
	},
	// Rotations and shears with bilinear sampling: nearest drops some
	// pixels of a rotation, and with them the marker.
	"rotate": {{"p": 0.7, "angle": 0.5, "interpolation": "bilinear"}},
	"augment_op": {
		{"name": "ShearX", "magnitude": 0.3},
		{"name": "ShearY", "magnitude": -0.25, "interpolation": "bilinear"},
		{"name": "Rotate", "magnitude": 25, "interpolation": "bilinear"},
		{"name": "TranslateY", "magnitude": -4.6},
		{"name": "Brightness", "magnitude": 0.5},
	},
	// One operation at a time: Equalize after a bilinear rotation makes
	// the spread marker a block, whose centre is not the marker's.
	"rand_augment":         {{"num_ops": 1, "interpolation": "bilinear"}, {"num_ops": 2, "magnitude": 4, "interpolation": "bilinear", "seed": 5}},
	"trivial_augment_wide": {{"interpolation": "bilinear"}},
	"auto_augment":         {{"policy": "imagenet", "interpolation": "bilinear"}},
}

// The stored images the markers are put in, and the decoders a transform
// is tested after: whole images, and a crop decoder (which fuses a flip).
const placeW, placeH = 40, 30

var placeDecoders = []optest.Named{
	{Name: "rgb_simple"},
	{Name: "rgb_center", Args: map[string]any{"size": []int{28, 28}, "ratio": 0.9}},
}

// TestPlaceFollowsRun walks the registry: every operation that moves
// pixels (pipeline.Geometric), with and without seed, must place a marker
// pixel where its Run moved it. Each program is built as the loader builds
// an image's, and its targets' replay with pipeline.NewGeometry from the
// same specs, so fusing and keys are those targets get.
func TestPlaceFollowsRun(t *testing.T) {
	// The file has boxes: rgb_iou_crop draws its crop around them.
	r := optest.ReaderWithBoxes(t, placeW, placeH)
	env := pipeline.Env{Reader: r, Field: optest.ImageField, Desc: r.Fields[optest.ImageField]}
	geometric := 0
	for _, name := range pipeline.Names() {
		sets, ok := placeArgs[name]
		if !ok {
			args, known := validArgs[name]
			if !known {
				t.Errorf("%s: no arguments to build it with: add it to validArgs (and to placeArgs if it moves pixels)", name)
				continue
			}
			sets = []map[string]any{args}
		}
		op, err := pipeline.New(env, optest.Spec(t, name, sets[0]))
		if err != nil {
			// An operation that cannot be built for an RGBImageField (a
			// decoder of another field) is never in a pipeline targets follow.
			// copy_paste reads the boxes and polygons fields the test file
			// lacks; it is a pipeline.Paster, not Geometric.
			if !strings.Contains(err.Error(), "cannot decode a") && name != "copy_paste" {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if _, ok := op.(pipeline.Geometric); !ok {
			continue
		}
		if _, ok := placeArgs[name]; !ok {
			t.Errorf("%s moves pixels (Geometric) and has no entry in placeArgs: give it arguments there", name)
			continue
		}
		geometric++
		for k, args := range sets {
			for _, seeded := range []bool{false, true} {
				_, hasSeed := args["seed"]
				if hasSeed && !seeded {
					continue
				}
				a := map[string]any{"key": 5}
				if seeded {
					a = map[string]any{"seed": 77}
				}
				for k, v := range args {
					a[k] = v
				}
				ops := []optest.Named{{Name: name, Args: a}}
				if !isDecoderOp(t, env, name, a) {
					for _, d := range placeDecoders {
						t.Run(fmt.Sprintf("%s/%d/seed=%v/after_%s", name, k, seeded, d.Name), func(t *testing.T) {
							checkPlace(t, env, append([]optest.Named{d}, ops...))
						})
					}
					continue
				}
				t.Run(fmt.Sprintf("%s/%d/seed=%v", name, k, seeded), func(t *testing.T) { checkPlace(t, env, ops) })
			}
		}
	}
	if geometric < len(placeArgs) {
		t.Errorf("%d Geometric operations found, %d in placeArgs", geometric, len(placeArgs))
	}
}

// isDecoderOp reports whether the operation reads its sample from the
// file: a program of it alone builds, one after a decoder does not.
func isDecoderOp(t *testing.T, env pipeline.Env, name string, args map[string]any) bool {
	_, err := pipeline.Build(env.Reader, env.Field, []json.RawMessage{optest.Spec(t, name, args)})
	return err == nil
}

// checkPlace runs the program ops on images holding one marker pixel, at
// a grid of places and for many samples, and compares where the marker's
// brightness lands with where the targets' replay maps its centre.
func checkPlace(t *testing.T, env pipeline.Env, ops []optest.Named) {
	specs := make([]json.RawMessage, len(ops))
	for i, o := range ops {
		specs[i] = optest.Spec(t, o.Name, o.Args)
	}
	p, err := pipeline.Build(env.Reader, env.Field, specs)
	if err != nil {
		t.Fatal(err)
	}
	g, err := pipeline.NewGeometry(env, pipeline.GeometrySpec{Image: env.Field, Ops: specs})
	if err != nil {
		t.Fatal(err)
	}
	col, err := env.Reader.Column(0, env.Field)
	if err != nil {
		t.Fatal(err)
	}
	oh, ow := p.Out.Shape[0], p.Out.Shape[1]
	out := make([]byte, p.Out.Bytes())
	blank := make([]byte, p.Out.Bytes())
	img := make([]byte, placeW*placeH*3)
	var s pipeline.Scratch
	inside := 0
	for pos := uint64(0); pos < 12; pos++ {
		for my := 2; my < placeH; my += 6 {
			for mx := 3; mx < placeW; mx += 7 {
				run := func(dst []byte, marker bool) *pipeline.Ctx {
					clear(img)
					if marker {
						// Mid-grey: Solarize inverts white to black.
						copy(img[(my*placeW+mx)*3:], []byte{160, 160, 160})
					}
					c := pipeline.NewCtx()
					c.Seed, c.Pos, c.Sample, c.Col, c.Heap = 3, pos, 0, col, img
					c.Read = func(f int) ([]byte, []byte, error) { return env.Reader.Read(c.Sample, f) }
					if err := p.Run(c, &s, nil, dst); err != nil {
						t.Fatal(err)
					}
					return c
				}
				// The marker is what differs from the image without it: the
				// fill, and photometric operations that change every pixel
				// (Invert, Solarize), are in both.
				run(blank, false)
				c := run(out, true)
				a, err := g.Sample(c, env.Reader)
				if err != nil {
					t.Fatal(err)
				}
				if a.W != ow || a.H != oh {
					t.Fatalf("Place gives a %dx%d output, Run %dx%d", a.W, a.H, ow, oh)
				}
				px, py, _ := a.Point(float64(mx)+0.5, float64(my)+0.5)
				mass, cx, cy := centroid(out, blank, ow, oh)
				// The marker's footprint in the output, and how far its
				// centroid may be from the mapped centre (resampling rounds).
				fx, fy := footprint(a, float64(mx)+0.5, float64(my)+0.5)
				v := a.Valid
				where := fmt.Sprintf("sample %d, marker (%d, %d): Place maps it to (%.2f, %.2f) of %dx%d (visible %v)",
					pos, mx, my, px, py, ow, oh, v)
				// Under a warp the visible part is not a rectangle: whether
				// the marker's neighbourhood is shown decides too.
				shown := 0
				for _, d := range [][2]float64{{0, 0}, {-1.5, -1.5}, {1.5, -1.5}, {-1.5, 1.5}, {1.5, 1.5}} {
					if a.Shows(float64(mx)+0.5+d[0], float64(my)+0.5+d[1]) {
						shown++
					}
				}
				switch {
				case shown == 5 && px > v[0]+fx && px < v[2]-fx && py > v[1]+fy && py < v[3]-fy:
					inside++
					if mass == 0 {
						t.Fatalf("%s; Run drops it", where)
					}
					if math.Abs(cx-px) > 0.5*fx || math.Abs(cy-py) > 0.5*fy {
						t.Fatalf("%s; Run puts it at (%.2f, %.2f)", where, cx, cy)
					}
				case shown == 0 || px < v[0]-2*fx || px > v[2]+2*fx || py < v[1]-2*fy || py > v[3]+2*fy:
					// Two resamplings (a decoder's resize, then a warp)
					// spread the marker by up to a footprint each.
					if mass != 0 {
						t.Fatalf("%s, outside; Run shows it at (%.2f, %.2f)", where, cx, cy)
					}
				}
			}
		}
	}
	if inside == 0 {
		t.Fatal("no marker landed well inside the output")
	}
}

// footprint is how far a stored pixel at (x, y) spreads in the output
// along each axis (at least a pixel): |SX| and |SY| for an axis-aligned
// map, the rows' sums of the map's Jacobian there under a warp.
func footprint(a pipeline.Affine, x, y float64) (fx, fy float64) {
	if a.Warp == nil {
		return max(1, math.Abs(a.SX)), max(1, math.Abs(a.SY))
	}
	const d = 1e-3
	x0, y0, _ := a.Warp.M.Apply(x, y)
	x1, y1, _ := a.Warp.M.Apply(x+d, y)
	x2, y2, _ := a.Warp.M.Apply(x, y+d)
	return max(1, (math.Abs(x1-x0)+math.Abs(x2-x0))/d), max(1, (math.Abs(y1-y0)+math.Abs(y2-y0))/d)
}

// centroid is the total brightness of an h×w RGB image's difference from
// base and its centre of mass, in continuous pixel coordinates (pixel i
// spans [i, i+1)).
func centroid(img, base []byte, w, h int) (mass, cx, cy float64) {
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := (y*w + x) * 3
			v := 0.0
			for k := i; k < i+3; k++ {
				v += math.Abs(float64(img[k]) - float64(base[k]))
			}
			mass += v
			cx += v * (float64(x) + 0.5)
			cy += v * (float64(y) + 0.5)
		}
	}
	if mass > 0 {
		cx, cy = cx/mass, cy/mass
	}
	return mass, cx, cy
}
