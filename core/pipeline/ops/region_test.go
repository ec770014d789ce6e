package ops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// regionSizes are the JPEG tiles of regionReader at imgsz 64: at their own
// size (decoded from the part the warp reads), shrunk and enlarged
// (decoded whole), wide and tall.
var regionSizes = [][2]int{{64, 48}, {40, 64}, {96, 72}, {30, 20}, {64, 64}, {64, 33}, {17, 64}}

// regionReader is a file of textured JPEG images (4:2:0, so that a crop's
// edges need the chroma beyond them) of regionSizes.
func regionReader(t *testing.T) *beton.Reader {
	t.Helper()
	descs := []field.Desc{{Type: field.RGBImage, Name: "image"}}
	enc, err := imageenc.NewEncoder(descs[0], field.ImageOptions{WriteMode: "jpg", JPEGQuality: 90})
	if err != nil {
		t.Fatal(err)
	}
	return betontest.Write(t, filepath.Join(t.TempDir(), "region.beton"), descs, []field.Encoder{enc},
		beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 1}, len(regionSizes), func(i int) []field.Value {
			w, h := regionSizes[i][0], regionSizes[i][1]
			img := make([]byte, w*h*3)
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					p := img[(y*w+x)*3:]
					p[0] = byte(x*7 + y*3 + i*40)
					p[1] = byte((x ^ y) * 11)
					p[2] = byte(128 + 100*((x/3+y/5+i)%2) - 50)
				}
			}
			return []field.Value{{Data: img, Width: w, Height: h, Channels: 3}}
		})
}

// A mosaic followed by RandomPerspective decodes and writes only the part
// of the canvas the warp reads: the result equals the mosaic's whole
// canvas warped by the same perspective run apart, for warps that read a
// corner of the canvas, most of it, all of it, or nothing of a tile.
func TestMosaicReadsWhatThePerspectiveWarps(t *testing.T) {
	r := regionReader(t)
	for _, tc := range []struct {
		name  string
		mos   map[string]any
		persp map[string]any
	}{
		{"YOLO's defaults", map[string]any{"imgsz": 64, "n": 4},
			map[string]any{"translate": 0.1, "scale": 0.5, "border": []int{-32, -32}}},
		{"rotation, shear, perspective", map[string]any{"imgsz": 64, "n": 4},
			map[string]any{"degrees": 30, "translate": 0.2, "scale": 0.9, "shear": 10, "perspective": 0.001,
				"border": []int{-32, -32}}},
		{"9 tiles, zoomed in", map[string]any{"imgsz": 64, "n": 9},
			map[string]any{"translate": 0.3, "scale": 0.2, "border": []int{-32, -32}, "fill": []int{1, 2, 3}}},
		{"a border larger than the canvas", map[string]any{"imgsz": 64, "n": 4, "p": 0.5},
			map[string]any{"degrees": 5, "scale": 0.9, "border": []int{8, 8}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			persp := map[string]any{"key": 1}
			for k, v := range tc.persp {
				persp[k] = v
			}
			mos := optest.Spec(t, "mosaic", tc.mos)
			warp := optest.Spec(t, "random_perspective", persp)
			linked, err := pipeline.Build(r, 0, []json.RawMessage{mos, warp})
			if err != nil {
				t.Fatal(err)
			}
			ops := linked.Ops()
			if _, ok := ops[0].(pipeline.RegionWriter); !ok {
				t.Fatalf("the mosaic %T is no RegionWriter", ops[0])
			}
			if _, ok := ops[1].(pipeline.RegionReader); !ok {
				t.Fatalf("the perspective %T is no RegionReader", ops[1])
			}
			whole, err := pipeline.Build(r, 0, []json.RawMessage{mos})
			if err != nil {
				t.Fatal(err)
			}
			apart, err := pipeline.BuildTail(r, 0, whole.Out, []json.RawMessage{warp})
			if err != nil {
				t.Fatal(err)
			}
			canvas, want := make([]byte, whole.Out.Bytes()), make([]byte, apart.Out.Bytes())
			got := make([]byte, linked.Out.Bytes())
			for pos := uint64(0); pos < 60; pos++ {
				c := regionCtx(r, pos)
				if err := linked.Run(c, &pipeline.Scratch{}, nil, got); err != nil {
					t.Fatal(err)
				}
				c = regionCtx(r, pos)
				if err := whole.Run(c, &pipeline.Scratch{}, nil, canvas); err != nil {
					t.Fatal(err)
				}
				if err := apart.Run(c, &pipeline.Scratch{}, canvas, want); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("position %d: %s", pos, firstDiff(got, want, linked.Out.Shape[1]))
				}
			}
		})
	}
}

func regionCtx(r *beton.Reader, pos uint64) *pipeline.Ctx {
	c := pipeline.NewCtx()
	c.Seed, c.Pos, c.Sample = 5, pos, pos%uint64(len(regionSizes))
	c.Col, c.Heap, _ = r.Read(c.Sample, 0)
	c.Read = func(f int) ([]byte, []byte, error) { return r.Read(c.Sample, f) }
	return c
}

func firstDiff(got, want []byte, w int) string {
	n := 0
	first := -1
	for i := range got {
		if got[i] != want[i] {
			n++
			if first < 0 {
				first = i
			}
		}
	}
	return fmt.Sprintf("%d bytes differ, the first at pixel (%d, %d): %d, want %d", n, first/3%w, first/3/w,
		got[first], want[first])
}
