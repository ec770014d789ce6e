package clip_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/internal/testphoto"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/clip"
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/ops"
	"github.com/ffcv-go/ffcv-go/core/pipeline/rgb"
	"github.com/ffcv-go/ffcv-go/core/videoenc"
)

const fw, fh = 96, 64 // stored frame size

// lengths are the test videos' frame counts: long enough, exactly one
// clip's span, and shorter than the clips.
var lengths = []int{24, 9, 5}

// videoFile writes a Video field (and an Int field) of clips panning over
// a real photo (Debian's mate-backgrounds), at 25 fps.
func videoFile(t *testing.T) *beton.Reader {
	t.Helper()
	return videoFileAt(t, func(int) float64 { return 25 })
}

// videoFileAt is videoFile with video i stored at rate fps(i) (0: none).
func videoFileAt(t *testing.T, fps func(i int) float64) *beton.Reader {
	t.Helper()
	photo, pw, _ := testphoto.Scaled(t, 8, testphoto.Garden)
	descs := []field.Desc{{Type: field.Video, Name: "video"}, {Type: field.Int, Name: "label"}}
	venc, err := videoenc.NewEncoder(descs[0], videoenc.Options{JPEGQuality: 90})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "clips.beton")
	return betontest.Write(t, path, descs, []field.Encoder{venc, field.NewIntEncoder()},
		beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 2}, len(lengths), func(i int) []field.Value {
			var pix []byte
			for k := 0; k < lengths[i]; k++ {
				for y := 0; y < fh; y++ {
					at := ((y+2*i)*pw + 5*k) * 3
					pix = append(pix, photo[at:at+fw*3]...)
				}
			}
			return []field.Value{{Data: pix, Width: fw, Height: fh, Channels: 3, Float: fps(i)}, {Int: int64(i)}}
		})
}

func specs(ops ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(ops))
	for i, s := range ops {
		out[i] = json.RawMessage(s)
	}
	return out
}

// run runs program p on sample i at position pos of epoch 0.
func run(t *testing.T, r *beton.Reader, p *pipeline.Program, i, pos uint64) []byte {
	t.Helper()
	c := pipeline.NewCtx()
	defer c.Close()
	col, heap, err := r.Read(i, p.Field)
	if err != nil {
		t.Fatal(err)
	}
	c.Sample, c.Pos, c.Seed, c.Col, c.Heap = i, pos, 7, col, heap
	out := make([]byte, p.SampleOut.Bytes())
	if err := p.Run(c, &pipeline.Scratch{}, nil, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// frameJPEG returns stored frame k of sample i.
func frameJPEG(t *testing.T, r *beton.Reader, i uint64, k int) []byte {
	t.Helper()
	col, heap, err := r.Read(i, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := field.VideoFrame(heap, field.ParseVideoMeta(col).Frames, k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A clip's frames share one crop, one flip: each frame equals that frame
// decoded alone with the crop the image decoder draws under the clip's key,
// and the clip starts where the start's own key says.
func TestOneGeometryPerClip(t *testing.T) {
	r := videoFile(t)
	const T, stride, oh, ow = 6, 2, 40, 48
	scale, ratio := [2]float64{0.2, 0.9}, [2]float64{0.75, 1.333}
	for _, tc := range []struct {
		name, flip string
	}{
		{"random crop", ""},
		{"random crop, flipped", `{"op": "flip_h", "p": 1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops := []string{fmt.Sprintf(`{"op": "clip_random", "num_frames": %d, "stride": %d, "short": "repeat",
				"geometry": {"op": "rgb_rrc", "size": [%d, %d], "scale": [0.2, 0.9], "ratio": [0.75, 1.333]}}`, T, stride, oh, ow)}
			if tc.flip != "" {
				ops = append(ops, tc.flip)
			}
			p, err := pipeline.Build(r, 0, specs(ops...))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.SampleOut; fmt.Sprint(got.Shape) != fmt.Sprint([]int{T, oh, ow, 3}) || got.Lead != 1 {
				t.Fatalf("output %+v", got)
			}
			dec := jpeg.NewDecoder()
			defer dec.Close()
			crops := map[image.Rectangle]bool{}
			for pos := uint64(0); pos < 12; pos++ {
				out := run(t, r, p, 0, pos)
				c := pipeline.NewCtx()
				c.Pos, c.Seed = pos, 7
				crop := rgb.RandomResizedCrop(c.Rand(0), fw, fh, scale, ratio)
				crops[crop] = true
				s := clip.Sampling{Frames: T, Step: stride}
				idx := make([]int, T)
				s.Indices(idx, lengths[0], s.RandomStart(c.Rand(clip.StartKey(0)), lengths[0]))
				want := make([]byte, oh*ow*3)
				for k, i := range idx {
					if err := dec.DecodeCropResizeFlip(frameJPEG(t, r, 0, i), crop, ow, oh, want, tc.flip != ""); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(out[k*len(want):(k+1)*len(want)], want) {
						t.Fatalf("position %d, clip frame %d (stored frame %d): not the frame decoded alone with crop %v", pos, k, i, crop)
					}
				}
			}
			if len(crops) < 6 {
				t.Fatalf("12 clips drew %d crops", len(crops))
			}
		})
	}
}

// A per-image op after the clip decoder draws once for the clip: every
// frame is what the op makes of that frame under its key.
func TestOpsDrawOncePerClip(t *testing.T) {
	r := videoFile(t)
	clipOp := `{"op": "clip_random", "num_frames": 8, "stride": 1, "short": "loop", "geometry": {"op": "rgb_center", "size": [32, 32], "ratio": 1}}`
	plain, err := pipeline.Build(r, 0, specs(clipOp))
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{
		`{"op": "brightness", "magnitude": 0.6, "p": 1}`,
		`{"op": "flip_v", "p": 0.5}`,
		`{"op": "translate", "padding": 6, "fill": [0, 0, 0]}`,
	} {
		t.Run(op, func(t *testing.T) {
			p, err := pipeline.Build(r, 0, specs(clipOp, op))
			if err != nil {
				t.Fatal(err)
			}
			frame := pipeline.Spec{Shape: []int{32, 32, 3}, DType: "|u1"}
			alone, err := pipeline.BuildTail(r, 0, frame, specs(strings.Replace(op, "{", `{"key": 1, `, 1)))
			if err != nil {
				t.Fatal(err)
			}
			changed := 0
			for pos := uint64(0); pos < 8; pos++ {
				in, out := run(t, r, plain, 1, pos), run(t, r, p, 1, pos)
				c := pipeline.NewCtx()
				c.Pos, c.Seed = pos, 7
				n := frame.Bytes()
				for k := 0; k < 8; k++ {
					want := make([]byte, n)
					if err := alone.Run(c, &pipeline.Scratch{}, in[k*n:(k+1)*n], want); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(out[k*n:(k+1)*n], want) {
						t.Fatalf("position %d, frame %d differs from the op run on it alone under its key", pos, k)
					}
				}
				if !bytes.Equal(in, out) {
					changed++
				}
			}
			if changed == 0 {
				t.Fatal("the op changed no clip")
			}
		})
	}
}

// Videos shorter than the clip follow the stated policy; evaluation clips
// are evenly spaced.
func TestShortVideosAndEvalClips(t *testing.T) {
	r := videoFile(t)
	dec := jpeg.NewDecoder()
	defer dec.Close()
	whole := func(i uint64, k int) []byte {
		if k < 0 {
			return make([]byte, fw*fh*3)
		}
		out := make([]byte, fw*fh*3)
		if _, _, err := dec.Decode(frameJPEG(t, r, i, k), out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		op     string
		sample uint64
		want   []int // stored frames, clip after clip; -1 black
	}{
		{"repeat", `{"op": "clip_random", "num_frames": 8, "stride": 1, "short": "repeat"}`, 2, []int{0, 1, 2, 3, 4, 4, 4, 4}},
		{"loop", `{"op": "clip_random", "num_frames": 8, "stride": 1, "short": "loop"}`, 2, []int{0, 1, 2, 3, 4, 0, 1, 2}},
		{"pad", `{"op": "clip_random", "num_frames": 8, "stride": 1, "short": "pad"}`, 2, []int{0, 1, 2, 3, 4, -1, -1, -1}},
		{"loop, stride 2", `{"op": "clip_random", "num_frames": 4, "stride": 2, "short": "loop"}`, 2, []int{0, 2, 4, 1}},
		{"exactly one span", `{"op": "clip_random", "num_frames": 5, "stride": 2, "short": "pad"}`, 1, []int{0, 2, 4, 6, 8}},
		{"centre clip", `{"op": "clip_eval", "num_frames": 4, "stride": 2, "num_clips": 1, "short": "repeat"}`, 0, []int{8, 10, 12, 14}},
		{"three clips", `{"op": "clip_eval", "num_frames": 2, "stride": 1, "num_clips": 3, "short": "repeat"}`, 0, []int{3, 4, 11, 12, 18, 19}},
		{"25 fps stored, 10 wanted", `{"op": "clip_eval", "num_frames": 3, "fps": 10, "num_clips": 1, "short": "repeat"}`, 0, []int{9, 11, 14}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pipeline.Build(r, 0, specs(tc.op))
			if err != nil {
				t.Fatal(err)
			}
			out := run(t, r, p, tc.sample, 3)
			n := fw * fh * 3
			if len(out) != len(tc.want)*n {
				t.Fatalf("%d bytes for %d frames", len(out), len(tc.want))
			}
			for k, i := range tc.want {
				if !bytes.Equal(out[k*n:(k+1)*n], whole(tc.sample, i)) {
					t.Fatalf("clip frame %d is not stored frame %d", k, i)
				}
			}
		})
	}
}

func TestBadClipDecoders(t *testing.T) {
	r := videoFile(t)
	for _, tc := range []struct {
		name, op string
		field    int
		want     string
	}{
		{"not a video", `{"op": "clip_random", "num_frames": 4, "stride": 1}`, 1, "cannot decode a IntField"},
		{"no frames", `{"op": "clip_random", "num_frames": 0, "stride": 1}`, 0, "num_frames 0"},
		{"stride and fps", `{"op": "clip_random", "num_frames": 4, "stride": 1, "fps": 5}`, 0, "stride"},
		{"neither", `{"op": "clip_random", "num_frames": 4}`, 0, "stride"},
		{"policy", `{"op": "clip_random", "num_frames": 4, "stride": 1, "short": "wrap"}`, 0, "short"},
		{"not an image decoder", `{"op": "clip_random", "num_frames": 4, "stride": 1, "geometry": {"op": "flip_h", "p": 1}}`, 0, "not an image decoder"},
		{"bad crop", `{"op": "clip_eval", "num_frames": 4, "stride": 1, "num_clips": 1, "geometry": {"op": "rgb_center", "size": [0, 4], "ratio": 1}}`, 0, "output_size [0 4]"},
		{"image decoder on a video", `{"op": "rgb_center", "size": [8, 8], "ratio": 1}`, 0, "cannot decode a VideoField"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.Build(r, tc.field, specs(tc.op))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one about %q", err, tc.want)
			}
		})
	}
}

// Sampling at an fps needs every video's stored rate: a file with a video
// without one is refused when the program is built, not mid-epoch; a
// stride needs none.
func TestFPSNeedsStoredRates(t *testing.T) {
	r := videoFileAt(t, func(i int) float64 {
		if i == 1 {
			return 0 // written from frames without a rate
		}
		return 25
	})
	for _, tc := range []struct {
		op, want string
	}{
		{`{"op": "clip_random", "num_frames": 4, "fps": 5}`, "sample 1 has none"},
		{`{"op": "clip_eval", "num_frames": 4, "fps": 5, "num_clips": 2}`, "sample 1 has none"},
		{`{"op": "clip_random", "num_frames": 4, "stride": 2}`, ""},
	} {
		_, err := pipeline.Build(r, 0, specs(tc.op))
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.op, err, tc.want)
		}
	}
}
