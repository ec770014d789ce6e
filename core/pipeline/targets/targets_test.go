package targets

import (
	"bytes"
	"encoding/binary"
	"image"
	"math"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// Nearest-neighbour sampling inverts the map at pixel centres: a flip
// mirrors columns exactly, a 2x crop repeats each source pixel twice.
func TestSourceIndex(t *testing.T) {
	flip := pipeline.Identity(5, 1).Then(pipeline.Same(5, 1).FlipX())
	for x := 0; x < 5; x++ {
		if got := sourceIndex(x, flip.SX, flip.TX, 5); got != 4-x {
			t.Fatalf("flip: column %d from %d, want %d", x, got, 4-x)
		}
	}
	zoom := pipeline.Identity(10, 1).Then(pipeline.CropStep(image.Rect(3, 0, 7, 1), 8, 1))
	for x := 0; x < 8; x++ {
		if got := sourceIndex(x, zoom.SX, zoom.TX, 10); got != 3+x/2 {
			t.Fatalf("zoom: column %d from %d, want %d", x, got, 3+x/2)
		}
	}
}

func TestBoxFilter(t *testing.T) {
	f := BoxFilter{MinSize: 2, MinArea: 9, MinVisibility: 0.5}
	for _, tc := range []struct {
		box  [4]float64
		area float64
		keep bool
	}{
		{[4]float64{0, 0, 4, 4}, 16, true},
		{[4]float64{0, 0, 1.5, 10}, 15, false}, // too narrow
		{[4]float64{0, 0, 2.5, 3}, 7.5, false}, // too small
		{[4]float64{0, 0, 4, 4}, 40, false},    // under half visible
		{[4]float64{3, 3, 3, 8}, 0, false},     // empty
	} {
		if got := f.keep(tc.box, tc.area); got != tc.keep {
			t.Errorf("keep(%v, %v) = %v, want %v", tc.box, tc.area, got, tc.keep)
		}
	}
	if math.IsNaN(pipeline.Identity(1, 1).SX) {
		t.Fatal("identity")
	}
}

// The decoders refuse bad arguments before they look at their field.
func TestBadArguments(t *testing.T) {
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "ragged", Args: map[string]any{"max_rows": -1}, Want: "max_rows -1 must not be negative"},
		{Name: "ragged", Args: map[string]any{"max_rows": 2, "min_size": -1}, Want: "min_size -1"},
		{Name: "ragged", Args: map[string]any{"max_rows": 2, "min_area": -1}, Want: "min_area -1"},
		{Name: "ragged", Args: map[string]any{"max_rows": 2, "min_visibility": 1.5}, Want: "min_visibility 1.5 must be in [0, 1]"},
		{Name: "mask", Args: map[string]any{"fill": -1}, Want: "fill -1 must be in [0, 65535]"},
		{Name: "mask", Args: map[string]any{"fill": 0, "min_visibility": -0.5}, Want: "min_visibility -0.5"},
		{Name: "polygon_mask", Args: map[string]any{"ratio": 0}, Want: "ratio 0 must be at least 1"},
		{Name: "copy_paste", Args: map[string]any{"p": 0.5}, Want: "copy_paste needs the instances' boxes and polygons"},
	})
}

// floats is row as little-endian float32s (item 4) or float64s (item 8).
func floats(row []float64, item int) []byte {
	b := make([]byte, len(row)*item)
	for i, x := range row {
		putFloat(b, item, i, x)
	}
	return b
}

// A kept row's coordinates through the image's map: boxes mapped and
// clipped to the visible part; points mapped, their visibility zeroed
// outside it, left and right swapped when the image is mirrored.
func TestMapRow(t *testing.T) {
	id := pipeline.Identity(100, 50)
	flip := id.Then(pipeline.Same(100, 50).FlipX())
	crop := id.Then(pipeline.CropStep(image.Rect(10, 5, 50, 25), 80, 40)) // 2x zoom of (10, 5)-(50, 25)
	boxes := field.Desc{Name: "boxes", DType: "<f4", Shape: []uint64{4}, Target: &field.TargetArgs{Coords: "xyxy"}}
	boxes64 := boxes
	boxes64.DType = "<f8"
	points := field.Desc{Name: "kp", DType: "<f4", Shape: []uint64{2, 3}, Target: &field.TargetArgs{Coords: "xy"}}
	bare := field.Desc{Name: "pt", DType: "<f4", Shape: []uint64{2}, Target: &field.TargetArgs{Coords: "xy"}}
	poly := field.Desc{Name: "polygons", DType: "<f4", Shape: []uint64{3, 2}, Target: &field.TargetArgs{Coords: "polygon"}}
	for _, tc := range []struct {
		name string
		desc field.Desc
		flip []int
		a    pipeline.Affine
		row  []float64
		want []float64
	}{
		{"box identity", boxes, nil, id, []float64{10, 5, 20, 15}, []float64{10, 5, 20, 15}},
		{"box flip", boxes, nil, flip, []float64{10, 5, 20, 15}, []float64{80, 5, 90, 15}},
		{"box zoom", boxes, nil, crop, []float64{10, 5, 20, 15}, []float64{0, 0, 20, 20}},
		{"box clipped", boxes, nil, crop, []float64{0, 0, 60, 30}, []float64{0, 0, 80, 40}},
		{"box float64", boxes64, nil, flip, []float64{0.25, 1, 99.5, 2}, []float64{0.5, 1, 99.75, 2}},
		{"points identity", points, nil, id, []float64{1, 2, 2, 3, 4, 1}, []float64{1, 2, 2, 3, 4, 1}},
		{"point cropped out", points, nil, crop, []float64{5, 10, 2, 20, 10, 2}, []float64{-10, 10, 0, 20, 10, 2}},
		{"points flipped, no flip_indices", points, nil, flip, []float64{10, 2, 2, 30, 4, 1}, []float64{90, 2, 2, 70, 4, 1}},
		{"points flipped and swapped", points, []int{1, 0}, flip, []float64{10, 2, 2, 30, 4, 1}, []float64{70, 4, 1, 90, 2, 2}},
		{"swap needs a mirror", points, []int{1, 0}, crop, []float64{10, 5, 2, 30, 15, 1}, []float64{0, 0, 2, 40, 20, 1}},
		{"point without visibility", bare, nil, crop, []float64{5, 10}, []float64{-10, 10}},
		{"polygon flipped", poly, nil, flip, []float64{10, 5, 20, 5, 15, 15}, []float64{90, 5, 80, 5, 85, 15}},
		{"polygon clamped, unlike points", poly, nil, crop, []float64{5, 10, 30, 10, 30, 40}, []float64{0, 10, 40, 10, 40, 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item, _ := tc.desc.ItemSize()
			d := &raggedDecoder{desc: tc.desc, flip: tc.flip}
			row := floats(tc.row, item)
			d.mapRow(tc.a, row, item)
			for i, want := range tc.want {
				if got := floatAt(row, item, i); math.Abs(got-want) > 1e-5 {
					t.Fatalf("value %d is %v, want %v (row %v)", i, got, want, tc.want)
				}
			}
		})
	}
}

// Masks are sampled nearest-neighbour under each output pixel's centre,
// fill where the output shows no image, and instance ids renumbered.
func TestMaskSample(t *testing.T) {
	src := []byte{1, 2, 3, 4, 5, 6, 7, 8} // 4×2
	id := pipeline.Identity(4, 2)
	for _, tc := range []struct {
		name string
		a    pipeline.Affine
		item int
		ids  []uint16
		want []byte
		err  string
	}{
		{"identity", id, 1, nil, []byte{1, 2, 3, 4, 5, 6, 7, 8}, ""},
		{"flip", id.Then(pipeline.Same(4, 2).FlipX()), 1, nil, []byte{4, 3, 2, 1, 8, 7, 6, 5}, ""},
		{"vertical flip", id.Then(pipeline.Same(4, 2).FlipY()), 1, nil, []byte{5, 6, 7, 8, 1, 2, 3, 4}, ""},
		{"2x zoom", id.Then(pipeline.CropStep(image.Rect(1, 0, 3, 2), 4, 4)), 1, nil,
			[]byte{2, 2, 3, 3, 2, 2, 3, 3, 6, 6, 7, 7, 6, 6, 7, 7}, ""},
		{"half size", id.Then(pipeline.CropStep(image.Rect(0, 0, 4, 2), 2, 1)), 1, nil, []byte{6, 8}, ""},
		{"shift pads", id.Then(pipeline.Step{SX: 1, TX: 1, SY: 1, TY: 0, W: 4, H: 2}), 1, nil,
			[]byte{99, 1, 2, 3, 99, 5, 6, 7}, ""},
		{"window past the edge", id.Then(pipeline.Step{SX: 1, TX: 0, SY: 1, TY: 1, W: 4, H: 3}), 1, nil,
			[]byte{99, 99, 99, 99, 1, 2, 3, 4, 5, 6, 7, 8}, ""},
		{"renumbered", id, 1, []uint16{0, 0, 1, 0, 2, 0, 3, 0, 4}, []byte{0, 1, 0, 2, 0, 3, 0, 4}, ""},
		{"unknown instance", id, 1, []uint16{0, 1, 2}, nil, "instance id 3, but the sample has 2 boxes"},
		{"uint16", id.Then(pipeline.Same(4, 2).FlipX()), 2, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &maskDecoder{item: tc.item, fill: 99}
			in := src
			if tc.item == 2 { // the same map, each value + 300
				in = make([]byte, 2*len(src))
				for i, v := range src {
					binary.LittleEndian.PutUint16(in[2*i:], uint16(v)+300)
				}
			}
			out := make([]byte, tc.a.W*tc.a.H*tc.item)
			err := d.sample(tc.a, in, 4, 2, out, tc.ids)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error about %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.item == 2 {
				for i, v := range []uint16{304, 303, 302, 301, 308, 307, 306, 305} {
					if got := binary.LittleEndian.Uint16(out[2*i:]); got != v {
						t.Fatalf("pixel %d is %d, want %d", i, got, v)
					}
				}
				return
			}
			if !bytes.Equal(out, tc.want) {
				t.Fatalf("got %v, want %v", out, tc.want)
			}
		})
	}
}

func TestCheckPermutation(t *testing.T) {
	for _, tc := range []struct {
		p   []int
		n   int
		err string
	}{
		{[]int{0, 2, 1}, 3, ""},
		{[]int{}, 0, ""},
		{[]int{0, 1}, 3, "2 indices for 3 points"},
		{[]int{0, 0, 1}, 3, "is not a permutation of 0..2"},
		{[]int{0, 3, 1}, 3, "is not a permutation"},
		{[]int{-1, 0, 1}, 3, "is not a permutation"},
	} {
		err := checkPermutation(tc.p, tc.n)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("checkPermutation(%v, %d) = %v, want %q", tc.p, tc.n, err, tc.err)
		}
	}
}

// YOLO's candidate filter (Ultralytics' box_candidates): strict
// comparisons with the visible part's width and height, its area against
// the box's area scaled by the map, its aspect ratio.
func TestBoxCandidates(t *testing.T) {
	yolo := BoxFilter{WHThr: 2, AreaThr: 0.1, ARThr: 100}
	for _, tc := range []struct {
		name string
		f    BoxFilter
		box  [4]float64
		area float64
		keep bool
	}{
		{"kept", yolo, [4]float64{0, 0, 10, 10}, 100, true},
		{"width at wh_thr", yolo, [4]float64{0, 0, 2, 10}, 20, false},
		{"width past wh_thr", yolo, [4]float64{0, 0, 2.01, 10}, 20.1, true},
		{"height at wh_thr", yolo, [4]float64{0, 0, 10, 2}, 20, false},
		{"area ratio at area_thr", yolo, [4]float64{0, 0, 10, 10}, 1000, false},
		{"area ratio past area_thr", yolo, [4]float64{0, 0, 10, 10}, 999, true},
		{"aspect at ar_thr", yolo, [4]float64{0, 0, 300, 3}, 900, false},
		{"aspect under ar_thr", yolo, [4]float64{0, 0, 299, 3}, 897, true},
		{"tall aspect", yolo, [4]float64{0, 0, 3, 300}, 900, false},
		{"no aspect limit", BoxFilter{WHThr: 2}, [4]float64{0, 0, 1000, 3}, 3000, true},
		{"area_thr off", BoxFilter{}, [4]float64{0, 0, 1, 1}, 1e6, true},
	} {
		if got := tc.f.keep(tc.box, tc.area); got != tc.keep {
			t.Errorf("%s: keep(%v, %v) = %v, want %v", tc.name, tc.box, tc.area, got, tc.keep)
		}
	}
	for _, f := range []BoxFilter{{WHThr: -1}, {AreaThr: -0.1}, {ARThr: math.NaN()}} {
		if err := f.check(); err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("%+v: %v", f, err)
		}
	}
}

// Rows under a map that is not axis-aligned: boxes are their mapped
// corners' bounds, clipped; points that leave the image get visibility
// 0; a mirrored warp swaps left and right points.
func TestMapRowWarp(t *testing.T) {
	id := pipeline.Identity(100, 50)
	// A quarter turn clockwise (y down): (x, y) lands at (50 − y, x).
	turn := id.Then(pipeline.WarpStep(pipeline.Matrix{0, -1, 50, 1, 0, 0, 0, 0, 1}, 1, 50, 100))
	mirror := id.Then(pipeline.Same(100, 50).FlipX()).Then(pipeline.WarpStep(pipeline.Matrix{0, -1, 50, 1, 0, 0, 0, 0, 1}, 1, 50, 100))
	// Twice as large, into a 100×50 window: the right half leaves.
	zoom := id.Then(pipeline.WarpStep(pipeline.Matrix{2, 0, 0, 0, 2, 0, 0, 0, 1}, 4, 100, 50))
	boxes := field.Desc{Name: "boxes", DType: "<f4", Shape: []uint64{4}, Target: &field.TargetArgs{Coords: "xyxy"}}
	points := field.Desc{Name: "kp", DType: "<f4", Shape: []uint64{2, 3}, Target: &field.TargetArgs{Coords: "xy"}}
	for _, tc := range []struct {
		name string
		desc field.Desc
		flip []int
		a    pipeline.Affine
		row  []float64
		want []float64
	}{
		{"box turned", boxes, nil, turn, []float64{10, 5, 20, 15}, []float64{35, 10, 45, 20}},
		{"box zoomed and clipped", boxes, nil, zoom, []float64{40, 5, 60, 15}, []float64{80, 10, 100, 30}},
		{"points turned", points, nil, turn, []float64{10, 5, 2, 90, 45, 1}, []float64{45, 10, 2, 5, 90, 1}},
		{"point zoomed out", points, nil, zoom, []float64{10, 5, 2, 60, 20, 2}, []float64{20, 10, 2, 120, 40, 0}},
		{"turned, not swapped", points, []int{1, 0}, turn, []float64{10, 5, 2, 90, 45, 1}, []float64{45, 10, 2, 5, 90, 1}},
		{"mirrored and swapped", points, []int{1, 0}, mirror, []float64{10, 5, 2, 90, 45, 1}, []float64{5, 10, 1, 45, 90, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item, _ := tc.desc.ItemSize()
			d := &raggedDecoder{desc: tc.desc, flip: tc.flip}
			row := floats(tc.row, item)
			d.mapRow(tc.a, row, item)
			for i, want := range tc.want {
				if got := floatAt(row, item, i); math.Abs(got-want) > 1e-5 {
					t.Fatalf("value %d is %v, want %v (row %v)", i, got, want, tc.want)
				}
			}
		})
	}
}

// A mask under a warp: each output pixel takes the stored pixel under its
// centre mapped back, fill where that is outside the image.
func TestMaskSampleWarp(t *testing.T) {
	src := []byte{1, 2, 3, 4, 5, 6, 7, 8} // 4×2
	id := pipeline.Identity(4, 2)
	turn := id.Then(pipeline.WarpStep(pipeline.Matrix{0, -1, 2, 1, 0, 0, 0, 0, 1}, 1, 2, 4))
	for _, tc := range []struct {
		name string
		a    pipeline.Affine
		ids  []uint16
		want []byte
	}{
		{"quarter turn", turn, nil, []byte{5, 1, 6, 2, 7, 3, 8, 4}},
		{"turn renumbered", turn, []uint16{0, 0, 1, 0, 2, 0, 3, 0, 4}, []byte{0, 0, 3, 1, 0, 0, 4, 2}},
		{"shift by half a pixel and a half", id.Then(pipeline.WarpStep(pipeline.Matrix{1, 0, 1.5, 0, 1, 0, 0, 0, 1}, 1, 4, 2)), nil,
			[]byte{99, 1, 2, 3, 99, 5, 6, 7}},
		{"crop cut away", id.Then(pipeline.CropStep(image.Rect(1, 0, 3, 2), 2, 2)).Then(pipeline.WarpStep(pipeline.Matrix{1, 0, 1, 0, 1, 0, 0, 0, 1}, 1, 3, 2)), nil,
			[]byte{99, 2, 3, 99, 6, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &maskDecoder{item: 1, fill: 99}
			out := make([]byte, tc.a.W*tc.a.H)
			if err := d.sample(tc.a, src, 4, 2, out, tc.ids); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, tc.want) {
				t.Fatalf("got %v, want %v", out, tc.want)
			}
		})
	}
}
