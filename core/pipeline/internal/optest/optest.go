// Package optest holds what the tests of the op families share: building
// a registered operation or a program, running an operation on an image,
// and a small file to build programs on. Their test images come from
// core/internal/testimg.
package optest

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// NewOp builds the registered operation name with args.
func NewOp(t testing.TB, name string, args map[string]any) pipeline.Op {
	t.Helper()
	op, err := pipeline.New(pipeline.Env{}, Spec(t, name, args))
	if err != nil {
		t.Fatalf("%s%v: %v", name, args, err)
	}
	return op
}

// Spec is the spec of operation name with args.
func Spec(t testing.TB, name string, args map[string]any) json.RawMessage {
	t.Helper()
	m := map[string]any{"op": name}
	for k, v := range args {
		m[k] = v
	}
	return MustJSON(t, m)
}

// MustJSON marshals v.
func MustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Apply runs op on img (spec in) for the sample at position pos (its
// index too) with key 0, and returns the output spec and bytes.
func Apply(t testing.TB, op pipeline.Op, in pipeline.Spec, img []byte, seed, pos uint64) (pipeline.Spec, []byte) {
	t.Helper()
	out, err := op.Out(in)
	if err != nil {
		t.Fatalf("Out(%v): %v", in, err)
	}
	c := pipeline.NewCtx()
	c.Seed, c.Pos, c.Sample = seed, pos, pos
	dst := make([]byte, out.Bytes())
	if err := op.Run(c, 0, img, dst); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out, dst
}

// RunKey runs op on img for the sample at pos with randomness key key
// (seed 7).
func RunKey(t testing.TB, op pipeline.Op, in pipeline.Spec, img []byte, pos uint64, key int) []byte {
	t.Helper()
	out, err := op.Out(in)
	if err != nil {
		t.Fatalf("Out(%v): %v", in, err)
	}
	c := pipeline.NewCtx()
	c.Seed, c.Pos, c.Sample = 7, pos, pos
	dst := make([]byte, out.Bytes())
	if err := op.Run(c, key, img, dst); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return dst
}

// ImgSpec is uint8 (h, w, c) images.
func ImgSpec(h, w, c int) pipeline.Spec { return pipeline.Spec{Shape: []int{h, w, c}, DType: "|u1"} }

// Shifted is the reference translation: out[y][x] = in[y+dy][x+dx] inside
// the image, fill outside.
func Shifted(in []byte, h, w, c, dy, dx int, fill []byte) []byte {
	out := make([]byte, len(in))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			sy, sx := y+dy, x+dx
			d := out[(y*w+x)*c : (y*w+x+1)*c]
			if sy < 0 || sy >= h || sx < 0 || sx >= w {
				copy(d, fill)
			} else {
				copy(d, in[(sy*w+sx)*c:(sy*w+sx+1)*c])
			}
		}
	}
	return out
}

// Fields of Reader's file.
const (
	ImageField = 0 // an RGBImageField of raw images (8×6 for Reader)
	LabelField = 1 // an IntField
)

// Reader opens a small .beton of two samples, for programs to be built on
// (what they decode comes from each test's Ctx.Col and Ctx.Heap).
func Reader(t testing.TB) *beton.Reader {
	t.Helper()
	return ReaderOf(t, 8, 6)
}

// ReaderOf is Reader with raw w×h images.
func ReaderOf(t testing.TB, w, h int) *beton.Reader {
	t.Helper()
	img, err := imageenc.NewEncoder(field.Desc{Type: field.RGBImage}, field.ImageOptions{WriteMode: "raw", JPEGQuality: 90})
	if err != nil {
		t.Fatal(err)
	}
	descs := []field.Desc{{Type: field.RGBImage, Name: "image"}, {Type: field.Int, Name: "label"}}
	path := filepath.Join(t.TempDir(), "optest.beton")
	return betontest.Write(t, path, descs, []field.Encoder{img, field.NewIntEncoder()},
		beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 1}, 2, func(i int) []field.Value {
			return []field.Value{{Data: testimg.PhotoLike(h, w, 3), Width: w, Height: h, Channels: 3}, {Int: int64(i)}}
		})
}

// BoxesField is ReaderWithBoxes' boxes: a RaggedArrayField of float32 xyxy
// boxes that follows the image.
const BoxesField = 2

// ReaderWithBoxes is ReaderOf with a third field, "boxes": in each w×h
// image a box in its top-left quarter and one in its bottom-right.
func ReaderWithBoxes(t testing.TB, w, h int) *beton.Reader {
	t.Helper()
	img, err := imageenc.NewEncoder(field.Desc{Type: field.RGBImage}, field.ImageOptions{WriteMode: "raw", JPEGQuality: 90})
	if err != nil {
		t.Fatal(err)
	}
	bd := field.Desc{Type: field.Ragged, Name: "boxes",
		Target: &field.TargetArgs{DType: "<f4", RowShape: []uint64{4}, Follows: "image", Coords: "xyxy"}}
	boxes, err := field.NewTargetEncoder(bd)
	if err != nil {
		t.Fatal(err)
	}
	descs := []field.Desc{{Type: field.RGBImage, Name: "image"}, {Type: field.Int, Name: "label"}, bd}
	fw, fh := float32(w), float32(h)
	var data []byte
	for _, v := range []float32{0.1 * fw, 0.1 * fh, 0.4 * fw, 0.45 * fh, 0.5 * fw, 0.35 * fh, 0.9 * fw, 0.9 * fh} {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	path := filepath.Join(t.TempDir(), "optest_boxes.beton")
	return betontest.Write(t, path, descs, []field.Encoder{img, field.NewIntEncoder(), boxes},
		beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 1}, 2, func(i int) []field.Value {
			return []field.Value{{Data: testimg.PhotoLike(h, w, 3), Width: w, Height: h, Channels: 3},
				{Int: int64(i)}, {Data: data}}
		})
}

// Build compiles ops (each an operation's name and arguments) for field f
// of r, each op keyed by its position.
func Build(t testing.TB, r *beton.Reader, f int, ops ...Named) *pipeline.Program {
	t.Helper()
	specs := make([]json.RawMessage, len(ops))
	for i, op := range ops {
		specs[i] = Spec(t, op.Name, op.Args)
	}
	p, err := pipeline.Build(r, f, specs)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Named is an operation's name and arguments.
type Named struct {
	Name string
	Args map[string]any
}

// BadArgs is an operation's spec that its factory must refuse, with an
// error that names Want.
type BadArgs struct {
	Name string
	Args map[string]any
	Want string
}

// CheckBadArgs checks that each case is refused with its error by
// pipeline.Check, without a file, as Python's constructors check them.
func CheckBadArgs(t *testing.T, cases []BadArgs) {
	for _, tc := range cases {
		t.Run(tc.Name+"_"+tc.Want, func(t *testing.T) {
			err := pipeline.Check(Spec(t, tc.Name, tc.Args))
			if err == nil || !strings.Contains(err.Error(), tc.Want) {
				t.Fatalf("got %v, want an error about %q", err, tc.Want)
			}
		})
	}
}

// BadInput is an operation that must refuse the input In, with an error
// that names Want.
type BadInput struct {
	Name string
	Args map[string]any
	In   pipeline.Spec
	Want string
}

// CheckBadInputs checks that each case's Out refuses its input with its
// error.
func CheckBadInputs(t *testing.T, cases []BadInput) {
	for _, tc := range cases {
		t.Run(tc.Name+"_"+tc.Want, func(t *testing.T) {
			op := NewOp(t, tc.Name, tc.Args)
			if _, err := op.Out(tc.In); err == nil || !strings.Contains(err.Error(), tc.Want) {
				t.Fatalf("got %v, want an error about %q", err, tc.Want)
			}
		})
	}
}
