// Package videoenc is the writer's side of VideoField: it turns a clip's
// frames (pixels, or image files) into the stored form, one JPEG with
// restart markers per frame, each made by package imageenc exactly as an
// RGBImageField image is (max_resolution, area resize, JPEG quality).
package videoenc

import (
	"bytes"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
)

// Options are VideoField's write options.
type Options struct {
	MaxResolution int // 0: keep the size
	JPEGQuality   int
}

// NewEncoder returns the encoder of a Video field.
//
// A value is a clip: Data holds its frames' pixels back to back (Width ×
// Height × Channels bytes each, so len(Data) / frame size frames), or Path
// lists image files, one per frame, separated by NUL bytes; Float is the
// frame rate (0 when unknown).
func NewEncoder(d field.Desc, o Options) (field.Encoder, error) {
	if d.Type != field.Video {
		return nil, fmt.Errorf("field %q: a %v is not a video field", d.Name, d.Type)
	}
	img, err := imageenc.NewEncoder(field.Desc{Type: field.RGBImage, Name: d.Name},
		field.ImageOptions{WriteMode: "jpg", MaxResolution: o.MaxResolution, JPEGQuality: o.JPEGQuality})
	if err != nil {
		return nil, fmt.Errorf("VideoField: %w", err)
	}
	return &encoder{frame: img}, nil
}

type encoder struct{ frame field.Encoder }

func (e *encoder) Encode(v field.Value, sample uint64) (field.Encoded, error) {
	if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) || v.Float < 0 {
		return field.Encoded{}, fmt.Errorf("%w: frame rate %g", field.ErrData, v.Float)
	}
	frames, err := split(v)
	if err != nil {
		return field.Encoded{}, err
	}
	jpegs := make([][]byte, len(frames))
	var w, h int
	for k, f := range frames {
		enc, err := e.frame.Encode(f, sample)
		if err != nil {
			return field.Encoded{}, fmt.Errorf("frame %d%s: %w", k, pathOf(f), err)
		}
		m := field.ParseRGBMeta(enc.Column)
		if k == 0 {
			w, h = m.Width, m.Height
		} else if m.Width != w || m.Height != h {
			return field.Encoded{}, fmt.Errorf("%w: frame %d%s is stored %dx%d, frame 0 %dx%d: a video's frames have one size",
				field.ErrData, k, pathOf(f), m.Width, m.Height, w, h)
		}
		jpegs[k] = enc.Heap
	}
	heap, err := field.PackFrames(jpegs)
	if err != nil {
		return field.Encoded{}, err
	}
	m := field.VideoMeta{Size: uint64(len(heap)), FPS: v.Float, Frames: len(frames), Width: w, Height: h, Encoding: field.VideoJPEG}
	return field.Encoded{Column: m.Column(), Heap: heap, HasHeap: true}, nil
}

func pathOf(v field.Value) string {
	if v.Path == "" {
		return ""
	}
	return " (" + v.Path + ")"
}

// split cuts a clip into one image value per frame.
func split(v field.Value) ([]field.Value, error) {
	if v.Path != "" {
		var out []field.Value
		for _, p := range bytes.Split([]byte(v.Path), []byte{0}) {
			if len(p) == 0 {
				return nil, fmt.Errorf("%w: an empty frame path", field.ErrData)
			}
			out = append(out, field.Value{Path: string(p)})
		}
		return out, nil
	}
	if v.Width < 1 || v.Height < 1 || v.Channels < 1 {
		return nil, fmt.Errorf("%w: frames of %dx%dx%d", field.ErrData, v.Height, v.Width, v.Channels)
	}
	size := v.Width * v.Height * v.Channels
	if len(v.Data) == 0 {
		return nil, fmt.Errorf("%w: the video has no frames", field.ErrData)
	}
	if len(v.Data)%size != 0 {
		return nil, fmt.Errorf("%w: %d bytes are not a whole number of %dx%dx%d frames", field.ErrData, len(v.Data), v.Height, v.Width, v.Channels)
	}
	out := make([]field.Value, len(v.Data)/size)
	for k := range out {
		out[k] = field.Value{Data: v.Data[k*size : (k+1)*size : (k+1)*size], Width: v.Width, Height: v.Height, Channels: v.Channels}
	}
	return out, nil
}
