// Package rgb registers the operations of RGBImageField: its decoders
// (raw or JPEG samples in one file both work) -- rgb_simple, whole images of
// one size; rgb_pad, whole images at the top-left of the file's largest
// size (FFCV-SSL's PadRGBImageDecoder); rgb_rrc, rgb_center and rgb_corner,
// random resized crops and centre and corner squares, which decode only
// the region of a JPEG they need and may flip while they resize;
// rgb_resize_pad, the detection resize; rgb_letterbox, YOLO's LetterBox,
// rect batches included; rgb_iou_crop, SSD's IoU crop around the stored
// boxes; mosaic, YOLO's Mosaic of several samples -- and the same crops
// after decoding: rrc (RandomResizedCrop), FFCV-SSL's center_crop and
// corner_crop, and letterbox and zoom_out (SSD's zoom out); yolo_mixup,
// YOLO's MixUp of the sample with a partner; label_rrc, label_letterbox,
// label_iou_crop and label_mosaic report what their decoders draw. Crop
// decoders of one field in several programs (views) share each sample's
// JPEG entropy decoding.
package rgb

import (
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/trace"
)

func init() {
	pipeline.RegisterDecoder("rgb_simple", newSimpleRGB)
	pipeline.RegisterDecoder("rgb_rrc", newCropRGB(randomCrop))
	pipeline.RegisterDecoder("rgb_center", newCropRGB(centerCrop))
	pipeline.RegisterDecoder("rgb_corner", newCropRGB(cornerCrop))
	pipeline.RegisterDecoder("rgb_pad", newPadRGB)
	pipeline.RegisterDecoder("rgb_resize_pad", newResizePad)
	pipeline.RegisterDecoder("label_rrc", newLabelRRC)
	pipeline.RegisterDecoder("rgb_letterbox", newLetterboxDecoder)
	pipeline.RegisterDecoder("label_letterbox", newLabelLetterbox)
	pipeline.Register("letterbox", newLetterboxTransform)
	pipeline.RegisterDecoder("rgb_iou_crop", newIoUCrop)
	pipeline.RegisterDecoder("label_iou_crop", newLabelIoUCrop)
	pipeline.Register("zoom_out", newZoomOut)
	pipeline.RegisterDecoder("mosaic", newMosaic)
	pipeline.RegisterDecoder("label_mosaic", newLabelMosaic)
	pipeline.Register("yolo_mixup", newYoloMixUp)
	pipeline.Register("rrc", newCropTransform(randomCrop))
	pipeline.Register("center_crop", newCropTransform(centerCrop))
	pipeline.Register("corner_crop", newCropTransform(cornerCrop))
}

type imageRef struct {
	mode byte
	w, h int
}

func imageOf(col []byte) imageRef {
	m := field.ParseRGBMeta(col)
	return imageRef{m.Mode, m.Width, m.Height}
}

func decoderOf(c *pipeline.Ctx) *jpeg.Decoder {
	d := c.State("jpeg", func() any { return jpeg.NewDecoder() }).(*jpeg.Decoder)
	d.SetTimed(c.Times != nil)
	return d
}

// timed adds the last decode's copy and entropy decoding to c.Times.
func timed(c *pipeline.Ctx, d *jpeg.Decoder) {
	if c.Times != nil {
		tm := d.LastTiming()
		c.Times[trace.Read] += tm.Copy
		c.Times[trace.Entropy] += tm.Entropy
	}
}

func resizerOf(c *pipeline.Ctx) *imgproc.Resizer {
	return c.State("resizer", func() any { return new(imgproc.Resizer) }).(*imgproc.Resizer)
}

// simpleRGB decodes whole images, which must all have one size.
type simpleRGB struct{ w, h int }

func newSimpleRGB(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	if err := pipeline.Parse(raw, &pipeline.NoArgs{}); err != nil {
		return nil, err
	}
	if err := pipeline.NeedType(env, field.RGBImage); err != nil {
		return nil, err
	}
	d := &simpleRGB{}
	for i := uint64(0); i < env.Reader.NumSamples(); i++ {
		col, err := env.Reader.Column(i, env.Field)
		if err != nil {
			return nil, err
		}
		im := imageOf(col)
		if i == 0 {
			d.w, d.h = im.w, im.h
		} else if im.w != d.w || im.h != d.h {
			return nil, fmt.Errorf("images have different sizes (%dx%d, then %dx%d at sample %d): "+
				"use a crop decoder", d.w, d.h, im.w, im.h, i)
		}
	}
	return d, nil
}

// Whole returns the decoder of whole w×h images without a file to check
// them against: the clip decoder's whole frames, whose sizes it checks in
// the videos' metadata.
func Whole(w, h int) pipeline.Op { return &simpleRGB{w: w, h: h} }

func (d *simpleRGB) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{d.h, d.w, 3}, DType: "|u1"}, nil
}

func (d *simpleRGB) Place(_ *pipeline.Ctx, _, w, h int) (pipeline.Step, error) {
	return pipeline.Same(w, h), nil
}

func (d *simpleRGB) Run(c *pipeline.Ctx, _ int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w != d.w || im.h != d.h {
		return fmt.Errorf("%w: image is %dx%d, expected %dx%d", field.ErrData, im.w, im.h, d.w, d.h)
	}
	if im.mode != field.ModeJPEG {
		if len(c.Heap) != len(out) {
			return fmt.Errorf("%w: raw image has %d bytes, expected %d", field.ErrData, len(c.Heap), len(out))
		}
		copy(out, c.Heap)
		return nil
	}
	return decodeWhole(c, im, out)
}

// decodeWhole decodes the sample's whole JPEG, im.w×im.h, into dst.
func decodeWhole(c *pipeline.Ctx, im imageRef, dst []byte) error {
	dec := soloDecoder(c)
	w, h, err := dec.Decode(c.Heap, dst)
	if err != nil {
		return fmt.Errorf("%w: %v", field.ErrData, err)
	}
	timed(c, dec)
	if w != im.w || h != im.h {
		return fmt.Errorf("%w: JPEG is %dx%d, the metadata says %dx%d", field.ErrData, w, h, im.w, im.h)
	}
	return nil
}
