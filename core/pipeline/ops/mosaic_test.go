package ops

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
	"github.com/ffcv-go/ffcv-go/core/pipeline/targets"
)

// The mosaic file: mosaicN raw images of different sizes, sample i one
// flat colour (mosaicColour), with one box (mosaicBox) and its label i.
const (
	mosaicN                     = 7
	mImage, mBoxes, mLabels int = 0, 1, 2
)

func mosaicColour(i uint64) [3]byte {
	return [3]byte{byte(20 + 30*i), byte(250 - 20*i), byte(3 + 11*i)}
}

func mosaicSize(i int) (w, h int) { return 10 + 7*(i%3) + i, 12 + 5*(i%4) }

func mosaicBox(i int) [4]float32 {
	if i%2 == 1 { // small, at the top left: tiles left of or above the centre cut it away
		return [4]float32{1, 1, 5, 4.5}
	}
	w, h := mosaicSize(i)
	return [4]float32{2, 1.5, float32(w) - 3, float32(h) - 2}
}

func mosaicReader(t *testing.T) *beton.Reader {
	t.Helper()
	descs := []field.Desc{
		{Type: field.RGBImage, Name: "image"},
		{Type: field.Ragged, Name: "boxes", DType: "<f4", Shape: []uint64{4},
			Target: &field.TargetArgs{DType: "<f4", RowShape: []uint64{4}, Follows: "image", Coords: "xyxy"}},
		{Type: field.Ragged, Name: "labels", DType: "<i8", Target: &field.TargetArgs{DType: "<i8", Follows: "boxes"}},
	}
	img, err := imageenc.NewEncoder(descs[0], field.ImageOptions{WriteMode: "raw", JPEGQuality: 90})
	if err != nil {
		t.Fatal(err)
	}
	encs := append([]field.Encoder{img}, betontest.Encoders(t, descs[1:])...)
	return betontest.Write(t, filepath.Join(t.TempDir(), "mosaic.beton"), descs, encs,
		beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 1}, mosaicN, func(i int) []field.Value {
			w, h := mosaicSize(i)
			img := make([]byte, w*h*3)
			c := mosaicColour(uint64(i))
			for k := 0; k < len(img); k += 3 {
				copy(img[k:], c[:])
			}
			box := mosaicBox(i)
			b := make([]byte, 16)
			for k, x := range box {
				binary.LittleEndian.PutUint32(b[4*k:], math.Float32bits(x))
			}
			lab := binary.LittleEndian.AppendUint64(nil, uint64(i))
			return []field.Value{{Data: img, Width: w, Height: h, Channels: 3}, {Data: b}, {Data: lab}}
		})
}

// mosaicCtx is the context of the sample at position pos of an epoch, as
// a loader worker sets it up.
func mosaicCtx(r *beton.Reader, f int, pos, epoch uint64) *pipeline.Ctx {
	c := pipeline.NewCtx()
	c.Seed, c.Epoch, c.Pos, c.Sample = 11, epoch, pos, (pos*3)%mosaicN
	c.Col, c.Heap, _ = r.Read(c.Sample, f)
	c.Read = func(f int) ([]byte, []byte, error) { return r.Read(c.Sample, f) }
	return c
}

// Every output pixel shows the colour of the last tile (in paint order)
// whose piece covers it, or the fill: Run paints where Pieces, which the
// targets follow, says each sample's image lands.
func TestMosaicPiecesFollowRun(t *testing.T) {
	r := mosaicReader(t)
	env := pipeline.Env{Reader: r, Field: mImage, Desc: r.Fields[mImage]}
	for _, tc := range []struct {
		name  string
		args  map[string]any
		epoch uint64
		tiles []int // the number of pieces each position may have
	}{
		{"4 tiles", map[string]any{"imgsz": 24, "n": 4}, 0, []int{4}},
		{"9 tiles", map[string]any{"imgsz": 24, "n": 9}, 0, []int{9}},
		{"p=0.5", map[string]any{"imgsz": 20, "n": 4, "p": 0.5, "fill": []int{1, 2, 3}}, 0, []int{1, 4}},
		{"closed", map[string]any{"imgsz": 20, "n": 4, "close_epoch": 2}, 2, []int{1}},
		{"before closing", map[string]any{"imgsz": 20, "n": 9, "close_epoch": 2}, 1, []int{9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs := []json.RawMessage{optest.Spec(t, "mosaic", tc.args)}
			p, err := pipeline.Build(r, mImage, specs)
			if err != nil {
				t.Fatal(err)
			}
			g, err := pipeline.NewGeometry(env, pipeline.GeometrySpec{Image: mImage, Ops: specs})
			if err != nil {
				t.Fatal(err)
			}
			side := 2 * tc.args["imgsz"].(int)
			if got := p.Out.Shape; !slices.Equal(got, []int{side, side, 3}) {
				t.Fatalf("output %v", got)
			}
			fill := [3]byte{114, 114, 114}
			if f, ok := tc.args["fill"].([]int); ok {
				fill = [3]byte{byte(f[0]), byte(f[1]), byte(f[2])}
			}
			out := make([]byte, p.Out.Bytes())
			seen := map[int]int{}
			for pos := uint64(0); pos < 16; pos++ {
				c := mosaicCtx(r, mImage, pos, tc.epoch)
				if err := p.Run(c, &pipeline.Scratch{}, nil, out); err != nil {
					t.Fatal(err)
				}
				pieces, err := g.Pieces(c, r, nil)
				if err != nil {
					t.Fatal(err)
				}
				seen[len(pieces)]++
				if pieces[0].Sample != c.Sample {
					t.Fatalf("first piece shows sample %d, not the sample's own %d", pieces[0].Sample, c.Sample)
				}
				if len(pieces) == 1 { // letterboxed into the centre imgsz square
					a, s := pieces[0].Map, float64(side/2)
					if a.Valid[0] < s/2 || a.Valid[2] > 1.5*s || a.Valid[1] < s/2 || a.Valid[3] > 1.5*s ||
						math.Abs(a.Valid[0]-s/2+a.Valid[2]-1.5*s) > 1 || math.Abs(a.Valid[1]-s/2+a.Valid[3]-1.5*s) > 1 ||
						max(a.Valid[2]-a.Valid[0], a.Valid[3]-a.Valid[1]) != s {
						t.Fatalf("position %d: the sample alone lies at %v, not centred in the middle %v square", pos, a.Valid, s)
					}
				}
				for y := 0; y < side; y++ {
					for x := 0; x < side; x++ {
						want := fill
						for _, pc := range pieces {
							v := pc.Map.Valid
							if float64(x)+0.5 > v[0] && float64(x)+0.5 < v[2] && float64(y)+0.5 > v[1] && float64(y)+0.5 < v[3] {
								want = mosaicColour(pc.Sample)
							}
						}
						if got := [3]byte(out[(y*side+x)*3:]); got != want {
							t.Fatalf("position %d, pixel (%d, %d) is %v, want %v (pieces %+v)", pos, x, y, got, want, pieces)
						}
					}
				}
			}
			for n := range seen {
				if !slices.Contains(tc.tiles, n) {
					t.Fatalf("%d pieces, want one of %v", n, tc.tiles)
				}
			}
			if len(seen) != len(tc.tiles) {
				t.Fatalf("pieces per position %v, want each of %v", seen, tc.tiles)
			}
		})
	}
}

// labelMosaic reads label_mosaic's report for position pos.
func labelMosaic(t *testing.T, p *pipeline.Program, r *beton.Reader, pos, epoch uint64) []int64 {
	out := make([]byte, p.Out.Bytes())
	if err := p.Run(mosaicCtx(r, mImage, pos, epoch), &pipeline.Scratch{}, nil, out); err != nil {
		t.Fatal(err)
	}
	v := make([]int64, len(out)/8)
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(out[8*i:]))
	}
	return v
}

// Partners are a function of (seed, epoch, position): any context, in any
// order, reports the same ones, and they are the pieces the targets get.
// They vary with the position and the epoch and cover the file.
func TestMosaicPartnersFromKey(t *testing.T) {
	r := mosaicReader(t)
	env := pipeline.Env{Reader: r, Field: mImage, Desc: r.Fields[mImage]}
	for _, n := range []int{4, 9} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			args := map[string]any{"imgsz": 16, "n": n, "seed": 5}
			label := optest.Build(t, r, mImage, optest.Named{Name: "label_mosaic", Args: args})
			specs := []json.RawMessage{optest.Spec(t, "mosaic", args)}
			g, err := pipeline.NewGeometry(env, pipeline.GeometrySpec{Image: mImage, Ops: specs})
			if err != nil {
				t.Fatal(err)
			}
			const positions = 24
			first := make([][]int64, positions)
			for pos := range uint64(positions) {
				first[pos] = labelMosaic(t, label, r, pos, 0)
			}
			used := map[int64]bool{}
			for pos := positions - 1; pos >= 0; pos-- { // backwards, on fresh contexts
				got := labelMosaic(t, label, r, uint64(pos), 0)
				if !slices.Equal(got, first[pos]) {
					t.Fatalf("position %d: %v, then %v", pos, first[pos], got)
				}
				if len(got) != 2+n || got[0] != 1 {
					t.Fatalf("position %d: report %v", pos, got)
				}
				if n == 4 && (got[1] < 8 || got[1] >= 24 || got[2] < 8 || got[2] >= 24) {
					t.Fatalf("position %d: centre (%d, %d) outside [imgsz/2, 3·imgsz/2)", pos, got[1], got[2])
				}
				if n == 9 && (got[1] != -1 || got[2] != -1) {
					t.Fatalf("position %d: 9 tiles have no centre, got (%d, %d)", pos, got[1], got[2])
				}
				c := mosaicCtx(r, mImage, uint64(pos), 0)
				pieces, err := g.Pieces(c, r, nil)
				if err != nil {
					t.Fatal(err)
				}
				for k, pc := range pieces[1:] {
					if int64(pc.Sample) != got[3+k] {
						t.Fatalf("position %d: piece %d shows sample %d, reported %d", pos, k+1, pc.Sample, got[3+k])
					}
					used[got[3+k]] = true
				}
			}
			if len(used) != mosaicN {
				t.Fatalf("partners %v over %d positions, want every one of %d samples", used, positions, mosaicN)
			}
			if slices.Equal(first[0], first[1]) || slices.Equal(first[0], labelMosaic(t, label, r, 0, 1)) {
				t.Fatal("the same draw at another position or epoch")
			}
		})
	}
}

// The boxes of every tile's sample come out through their tile's map,
// clipped to it, with the labels of their own sample; boxes a tile cuts
// away go with their labels.
func TestMosaicTargetsFromPartners(t *testing.T) {
	r := mosaicReader(t)
	for _, tc := range []struct {
		name  string
		n     int
		mixup bool
	}{{"4", 4, false}, {"9", 9, false}, {"4+mixup", 4, true}} {
		n := tc.n
		t.Run(tc.name, func(t *testing.T) {
			img := []any{map[string]any{"op": "mosaic", "imgsz": 20, "n": n}, map[string]any{"op": "flip_h", "p": 0.5}}
			if tc.mixup {
				img = append(img, map[string]any{"op": "yolo_mixup", "p": 0.5}, map[string]any{"op": "flip_v", "p": 0.5})
			}
			geo := map[string]any{"image": mImage, "ops": img}
			boxes := optest.Build(t, r, mBoxes, optest.Named{Name: "ragged", Args: map[string]any{"max_rows": 18, "geometry": geo, "min_size": 1}})
			labels := optest.Build(t, r, mLabels, optest.Named{Name: "ragged", Args: map[string]any{"max_rows": 18, "geometry": geo, "boxes": mBoxes, "min_size": 1}})
			var ispecs []json.RawMessage
			for _, op := range img {
				ispecs = append(ispecs, optest.MustJSON(t, op))
			}
			env := pipeline.Env{Reader: r, Field: mImage, Desc: r.Fields[mImage]}
			g, err := pipeline.NewGeometry(env, pipeline.GeometrySpec{Image: mImage, Ops: ispecs})
			if err != nil {
				t.Fatal(err)
			}
			bout, lout := make([]byte, boxes.Out.Bytes()), make([]byte, labels.Out.Bytes())
			cut := 0
			var piecesSeen []int
			for pos := uint64(0); pos < 20; pos++ {
				if err := boxes.Run(mosaicCtx(r, mBoxes, pos, 0), &pipeline.Scratch{}, nil, bout); err != nil {
					t.Fatal(err)
				}
				if err := labels.Run(mosaicCtx(r, mLabels, pos, 0), &pipeline.Scratch{}, nil, lout); err != nil {
					t.Fatal(err)
				}
				pieces, err := g.Pieces(mosaicCtx(r, mImage, pos, 0), r, nil)
				if err != nil {
					t.Fatal(err)
				}
				piecesSeen = append(piecesSeen, len(pieces))
				// The expected rows: each piece's box mapped and clipped, kept at least 1 px wide and high.
				type row struct {
					box    [4]float64
					sample uint64
					tile   [4]float64
				}
				var want []row
				for _, pc := range pieces {
					b := mosaicBox(int(pc.Sample))
					cb, _ := pc.Map.Box([4]float64{float64(b[0]), float64(b[1]), float64(b[2]), float64(b[3])})
					if cb[2]-cb[0] < 1 || cb[3]-cb[1] < 1 {
						cut++
						continue
					}
					want = append(want, row{cb, pc.Sample, pc.Map.Valid})
				}
				nb, nl := int(binary.LittleEndian.Uint64(bout)), int(binary.LittleEndian.Uint64(lout))
				if nb != len(want) || nl != nb {
					t.Fatalf("position %d: %d boxes and %d labels, want %d", pos, nb, nl, len(want))
				}
				for k, w := range want {
					lab := int64(binary.LittleEndian.Uint64(lout[targets.RaggedHeader+8*k:]))
					if lab != int64(w.sample) {
						t.Fatalf("position %d, row %d: label %d, want %d", pos, k, lab, w.sample)
					}
					for j := 0; j < 4; j++ {
						got := float64(math.Float32frombits(binary.LittleEndian.Uint32(bout[targets.RaggedHeader+16*k+4*j:])))
						if math.Abs(got-w.box[j]) > 1e-3 {
							t.Fatalf("position %d, row %d: coordinate %d is %v, want box %v", pos, k, j, got, w.box)
						}
					}
					if b, v := w.box, w.tile; b[0] < v[0] || b[2] > v[2] || b[1] < v[1] || b[3] > v[3] {
						t.Fatalf("position %d, row %d: box %v outside its tile %v", pos, k, b, v)
					}
				}
			}
			if tc.mixup && !slices.Contains(piecesSeen, 8) {
				t.Fatalf("pieces per position %v: no mixup of two mosaics", piecesSeen)
			}
			if n == 4 && cut == 0 {
				t.Fatal("no box was cut away: the test misses the filter")
			}
		})
	}
}

// Bad arguments are refused before the file, and a MixUp without the
// operations its partner goes through when the pipeline is built.
func TestMosaicRefusals(t *testing.T) {
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "mosaic", Args: map[string]any{"imgsz": 15, "n": 4}, Want: "imgsz 15 must be even"},
		{Name: "mosaic", Args: map[string]any{"imgsz": 16, "n": 3}, Want: "n 3 must be 4 or 9"},
		{Name: "mosaic", Args: map[string]any{"imgsz": 16, "n": 4, "p": 1.5}, Want: "p 1.5 must be in [0, 1]"},
		{Name: "mosaic", Args: map[string]any{"imgsz": 16, "n": 4, "close_epoch": -1}, Want: "close_epoch -1"},
		{Name: "mosaic", Args: map[string]any{"imgsz": 16, "n": 4, "fill": []int{1, 2}}, Want: "fill needs 3 values"},
		{Name: "label_mosaic", Args: map[string]any{"imgsz": 16, "n": 4}, Want: "seed is missing"},
		{Name: "yolo_mixup", Args: map[string]any{"p": 2}, Want: "p 2 must be in [0, 1]"},
	})
	r := mosaicReader(t)
	mix := optest.Spec(t, "yolo_mixup", map[string]any{"p": 1})
	for _, tc := range []struct {
		name string
		ops  []json.RawMessage
		tail bool
		want string
	}{
		{"first", []json.RawMessage{mix}, false, "needs the image decoder and built-in operations before it"},
		{"after a Python stage", []json.RawMessage{mix}, true, "needs the image decoder and built-in operations before it"},
	} {
		var err error
		if tc.tail {
			_, err = pipeline.BuildTail(r, mImage, optest.ImgSpec(8, 8, 3), tc.ops)
		} else {
			_, err = pipeline.Build(r, mImage, tc.ops)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
	}
}

// MixUp blends the sample's mosaic with a partner's, each flipped its own
// way: every pixel is own·r + partner·(1-r), truncated, where own and
// partner are the colours the pieces the targets follow put there (the
// sample's 4 tiles first, then the partner's), and r is the ratio its
// report gives.
func TestMixUpPiecesFollowRun(t *testing.T) {
	r := mosaicReader(t)
	env := pipeline.Env{Reader: r, Field: mImage, Desc: r.Fields[mImage]}
	mix := map[string]any{"p": 0.6, "seed": 4}
	specs := []json.RawMessage{
		optest.Spec(t, "mosaic", map[string]any{"imgsz": 12, "n": 4, "seed": 2}),
		optest.Spec(t, "flip_h", map[string]any{"p": 0.5}),
		optest.Spec(t, "yolo_mixup", mix),
		optest.Spec(t, "flip_v", map[string]any{"p": 0.5}),
	}
	p, err := pipeline.Build(r, mImage, specs)
	if err != nil {
		t.Fatal(err)
	}
	g, err := pipeline.NewGeometry(env, pipeline.GeometrySpec{Image: mImage, Ops: specs})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := pipeline.New(env, optest.Spec(t, "yolo_mixup", mix))
	if err != nil {
		t.Fatal(err)
	}
	label := optest.Build(t, r, mImage, optest.Named{Name: "label_mosaic", Args: map[string]any{"imgsz": 12, "n": 4, "seed": 2}})
	side := 24
	out := make([]byte, p.Out.Bytes())
	colour := func(pieces []pipeline.Piece, x, y int) [3]byte {
		c := [3]byte{114, 114, 114}
		for _, pc := range pieces {
			v := pc.Map.Valid
			if float64(x)+0.5 > v[0] && float64(x)+0.5 < v[2] && float64(y)+0.5 > v[1] && float64(y)+0.5 < v[3] {
				c = mosaicColour(pc.Sample)
			}
		}
		return c
	}
	mixed := 0
	for pos := uint64(0); pos < 16; pos++ {
		c := mosaicCtx(r, mImage, pos, 0)
		if err := p.Run(c, &pipeline.Scratch{}, nil, out); err != nil {
			t.Fatal(err)
		}
		pieces, err := g.Pieces(c, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		var params [3]float32
		rep.(pipeline.Reporter).Report(c, pipeline.SeedKey(4), params[:])
		if want := 4 + 4*int(params[0]); len(pieces) != want {
			t.Fatalf("position %d: %d pieces, want %d (report %v)", pos, len(pieces), want, params)
		}
		ratio := 1.0
		if params[0] == 1 {
			mixed++
			if pieces[4].Sample != uint64(params[1]) {
				t.Fatalf("position %d: the partner's first piece shows %d, reported %v", pos, pieces[4].Sample, params)
			}
			// The partner's mosaic draws as the partner at its own position.
			lc := mosaicCtx(r, mImage, pipeline.PartnerPos(pos, pipeline.SeedKey(4)), 0)
			lc.Sample = pieces[4].Sample
			lout := make([]byte, label.Out.Bytes())
			if err := label.Run(lc, &pipeline.Scratch{}, nil, lout); err != nil {
				t.Fatal(err)
			}
			for k, pc := range pieces[5:] {
				if want := binary.LittleEndian.Uint64(lout[8*(3+k):]); pc.Sample != want {
					t.Fatalf("position %d: the partner's tile %d shows sample %d, its mosaic drew %d", pos, k+1, pc.Sample, want)
				}
			}
			ratio = float64(params[2])
		}
		for y := 0; y < side; y++ {
			for x := 0; x < side; x++ {
				a, b := colour(pieces[:4], x, y), colour(pieces[4:], x, y)
				for k := range 3 {
					want := a[k]
					if len(pieces) > 4 {
						// The report's float32 ratio may round the blend the other way.
						want = byte(float64(a[k])*ratio + float64(b[k])*(1-ratio))
					}
					if got := out[(y*side+x)*3+k]; int(got)-int(want) > 1 || int(want)-int(got) > 1 {
						t.Fatalf("position %d, pixel (%d, %d), channel %d: %d, want %d (own %v, partner %v, ratio %v)",
							pos, x, y, k, got, want, a, b, ratio)
					}
				}
			}
		}
	}
	if mixed == 0 || mixed == 16 {
		t.Fatalf("%d of 16 positions mixed, with p 0.6", mixed)
	}
}
