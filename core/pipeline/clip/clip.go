// Package clip holds the decoders of VideoField: which stored frames make a
// sample's clip (a random start per sample and epoch, or evenly spaced
// clips), and one image decoder's geometry -- random resized crop, centre
// crop, resize-pad, with a fused flip -- drawn once per clip and applied to
// every frame, each frame region-decoded by that image decoder itself.
package clip

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/internal/rng"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/rgb"
)

func init() {
	pipeline.RegisterDecoder("clip_random", newDecoder(true))
	pipeline.RegisterDecoder("clip_eval", newDecoder(false))
}

// The image decoders a clip's frames may go through: each frame is
// region-decoded by the decoder itself.
var geometries = map[string]bool{"rgb_simple": true, "rgb_rrc": true, "rgb_center": true, "rgb_resize_pad": true}

// decoder decodes clips of a Video field: Out (T, H, W, 3), or (K, T, H,
// W, 3) for K evaluation clips.
type decoder struct {
	random   bool
	sampling Sampling // Step is the stride; with fps > 0 it is set per video
	fps      float64
	clips    int
	// frame is the image decoder run on each frame with the clip's key (so
	// the same draw for every frame).
	frame      pipeline.Op
	frameHead  pipeline.Head
	w, h       int
	frameBytes int
}

func newDecoder(random bool) pipeline.Factory {
	return func(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
		var a struct {
			NumFrames int             `json:"num_frames"`
			Stride    int             `json:"stride"`
			FPS       float64         `json:"fps"`
			Short     string          `json:"short"`
			NumClips  int             `json:"num_clips"`
			Geometry  json.RawMessage `json:"geometry"`
		}
		if err := pipeline.Parse(raw, &a); err != nil {
			return nil, err
		}
		if a.NumFrames < 1 {
			return nil, fmt.Errorf("num_frames %d must be at least 1", a.NumFrames)
		}
		if (a.Stride > 0) == (a.FPS > 0) {
			return nil, fmt.Errorf("give a stride >= 1 or an fps > 0, not both (stride %d, fps %g)", a.Stride, a.FPS)
		}
		short, err := ParseShort(a.Short)
		if err != nil {
			return nil, err
		}
		d := &decoder{random: random, fps: a.FPS, clips: 1,
			sampling: Sampling{Frames: a.NumFrames, Step: float64(a.Stride), Short: short}}
		if !random {
			if a.NumClips < 1 {
				return nil, fmt.Errorf("num_clips %d must be at least 1", a.NumClips)
			}
			d.clips = a.NumClips
		} else if a.NumClips != 0 {
			return nil, fmt.Errorf("num_clips is the evaluation decoder's")
		}
		if err := checkGeometry(a.Geometry); err != nil {
			return nil, fmt.Errorf("geometry: %w", err)
		}
		if err := pipeline.NeedType(env, field.Video); err != nil {
			if errors.Is(err, pipeline.ErrNoFile) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: a clip decoder reads a VideoField", err)
		}
		if err := d.geometry(env, a.Geometry); err != nil {
			return nil, fmt.Errorf("geometry: %w", err)
		}
		if d.fps > 0 {
			if err := needRates(env, d.fps); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
}

// checkGeometry checks the image decoder of each frame and its arguments,
// without the file (pipeline.Check).
func checkGeometry(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	head, err := pipeline.ParseHead(raw)
	if err != nil {
		return err
	}
	if !geometries[head.Op] {
		return fmt.Errorf("%s is not an image decoder a clip's frames can go through", head.Name())
	}
	if err := pipeline.Check(raw); err != nil {
		return fmt.Errorf("%s: %w", head.Name(), err)
	}
	return nil
}

// needRates checks, in the videos' metadata, that every video has the
// stored frame rate that sampling at fps needs, so that a file without
// one fails when the loader is built rather than mid-epoch.
func needRates(env pipeline.Env, fps float64) error {
	for i := uint64(0); i < env.Reader.NumSamples(); i++ {
		col, err := env.Reader.Column(i, env.Field)
		if err != nil {
			return err
		}
		if m := field.ParseVideoMeta(col); !(m.FPS > 0) {
			return fmt.Errorf("fps %g samples at the videos' stored frame rate, and sample %d has none "+
				"(written from frames without one): give a stride, or write the videos with their rate "+
				"(Frames(frames, fps))", fps, i)
		}
	}
	return nil
}

// geometry builds the image decoder of each frame (checkGeometry has
// checked it), as Build would for an RGBImage field; for whole frames,
// after checking in the videos' metadata that they have one size.
func (d *decoder) geometry(env pipeline.Env, raw json.RawMessage) error {
	if len(raw) == 0 {
		raw = json.RawMessage(`{"op": "rgb_simple"}`)
	}
	head, err := pipeline.ParseHead(raw)
	if err != nil {
		return err
	}
	d.frameHead = head
	if head.Op == "rgb_simple" {
		for i := uint64(0); i < env.Reader.NumSamples(); i++ {
			col, err := env.Reader.Column(i, env.Field)
			if err != nil {
				return err
			}
			m := field.ParseVideoMeta(col)
			if i == 0 {
				d.w, d.h = m.Width, m.Height
			} else if m.Width != d.w || m.Height != d.h {
				return fmt.Errorf("videos have different frame sizes (%dx%d, then %dx%d at sample %d): "+
					"give a crop geometry", d.w, d.h, m.Width, m.Height, i)
			}
		}
		d.frame = rgb.Whole(d.w, d.h)
	} else {
		img := env
		img.Desc = field.Desc{Type: field.RGBImage, Name: env.Desc.Name}
		if d.frame, err = pipeline.New(img, raw); err != nil {
			return fmt.Errorf("%s: %w", head.Name(), err)
		}
		out, err := d.frame.Out(pipeline.Spec{})
		if err != nil {
			return fmt.Errorf("%s: %w", head.Name(), err)
		}
		d.h, d.w = out.Shape[0], out.Shape[1]
	}
	d.frameBytes = d.w * d.h * 3
	return nil
}

func (d *decoder) Out(pipeline.Spec) (pipeline.Spec, error) {
	s := pipeline.Spec{Shape: []int{d.sampling.Frames, d.h, d.w, 3}, DType: "|u1", Lead: 1}
	if !d.random && d.clips > 1 {
		s.Shape, s.Lead = append([]int{d.clips}, s.Shape...), 2
	}
	return s, nil
}

// Fuse lets the frames' image decoder take the flip after the clip
// decoder (lifted over the frames), as it takes one after itself.
func (d *decoder) Fuse(next pipeline.Op, key int) bool {
	if l, ok := next.(*pipeline.Lifted); ok {
		next = l.Frame()
	}
	f, ok := d.frame.(pipeline.Fuser)
	return ok && f.Fuse(next, key)
}

// StartKey is the randomness key of a clip's start, apart from the key of
// its geometry (the decoder's own, which the frames' image decoder draws
// under, so a seed pairs it with the Label ops as for images).
func StartKey(key int) int {
	return int(rng.SplitMix64(uint64(key)))
}

// scratch is a worker's per-clip buffers: the frames' RGBImage column and
// the clip's stored frame indices.
type scratch struct {
	col [13]byte
	idx []int
}

func (d *decoder) Run(c *pipeline.Ctx, key int, _, out []byte) error {
	m := field.ParseVideoMeta(c.Col)
	if err := field.CheckVideo(m); err != nil {
		return err
	}
	s := d.sampling
	if d.fps > 0 {
		if m.FPS <= 0 {
			return fmt.Errorf("%w: the video has no stored frame rate to sample at %g fps: use a stride", field.ErrData, d.fps)
		}
		s.Step = m.FPS / d.fps
	}
	frameKey := d.frameHead.KeyAt(key)
	col, heap := c.Col, c.Heap
	defer func() { c.Col, c.Heap = col, heap }()
	// Each frame goes to the image decoder as an RGBImage JPEG of its size.
	sc := c.State("clip", func() any { return new(scratch) }).(*scratch)
	frameCol := sc.col[:]
	frameCol[field.RGBModeOff] = field.ModeJPEG
	binary.LittleEndian.PutUint16(frameCol[field.RGBWidthOff:], uint16(m.Width))
	binary.LittleEndian.PutUint16(frameCol[field.RGBHeightOff:], uint16(m.Height))
	if cap(sc.idx) < s.Frames {
		sc.idx = make([]int, s.Frames)
	}
	idx := sc.idx[:s.Frames]
	clipBytes := s.Frames * d.frameBytes
	for j := 0; j < d.clips; j++ {
		start := s.EvenStart(m.Frames, j, d.clips)
		if d.random {
			start = s.RandomStart(c.Rand(StartKey(key)), m.Frames)
		}
		s.Indices(idx, m.Frames, start)
		for k, i := range idx {
			dst := out[j*clipBytes+k*d.frameBytes : j*clipBytes+(k+1)*d.frameBytes]
			switch {
			case i < 0:
				clear(dst)
			case k > 0 && i == idx[k-1]: // a frame again (repeat, up-sampling): same pixels
				copy(dst, out[j*clipBytes+(k-1)*d.frameBytes:])
			default:
				if err := d.decodeFrame(c, frameKey, frameCol, heap, m.Frames, i, dst); err != nil {
					return fmt.Errorf("frame %d of %d: %w", i, m.Frames, err)
				}
			}
		}
	}
	return nil
}

// decodeFrame decodes stored frame i of the video's n into dst through
// the frames' image decoder, under key.
func (d *decoder) decodeFrame(c *pipeline.Ctx, key int, col, heap []byte, n, i int, dst []byte) error {
	data, err := field.VideoFrame(heap, n, i)
	if err != nil {
		return err
	}
	c.Col, c.Heap = col, data
	return d.frame.Run(c, key, nil, dst)
}
