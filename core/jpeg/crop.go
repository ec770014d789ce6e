package jpeg

/*
#include "ffjpeg.h"
*/
import "C"

import (
	"fmt"
	"image"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// DecodeCropResize decodes the rectangle crop of the full-resolution image
// in data and resizes it to outW×outH RGB pixels in dst (at least
// outW*outH*3 bytes), like decoding everything, cropping and calling
// imgproc.ResizeArea, but faster:
//
//   - libjpeg scales the image by 1/2, 3/8, 1/4 or 1/8 during the inverse DCT
//     when the scaled crop still covers outW×outH (see chooseScale; 4:2:2
//     and 4:4:0 files use 1/4 where 1/8 would give blocky colour);
//   - only the iMCU columns and the rows under the crop are decoded, and
//     decoding stops after the last needed row;
//   - the crop is mapped into the scaled image with sub-pixel precision and
//     box-filtered (imgproc.Resizer.ResizeAreaRegion), so the result differs
//     from the full decode only by the DCT scaling: well under one level on
//     smooth content, one or two on average on detailed photos, more on
//     single pixels at sharp edges.
//
// When no DCT scaling applies (the crop is less than twice the output in
// some dimension) the result is identical to decode + crop + ResizeArea,
// OpenCV's upscaling included.
func (d *Decoder) DecodeCropResize(data []byte, crop image.Rectangle, outW, outH int, dst []byte) error {
	return d.DecodeCropResizeFlip(data, crop, outW, outH, dst, false)
}

// DecodeCropResizeFlip is DecodeCropResize with the result mirrored
// horizontally when flip is set; the resize writes the mirrored rows
// directly, so flipping costs nothing.
func (d *Decoder) DecodeCropResizeFlip(data []byte, crop image.Rectangle, outW, outH int, dst []byte, flip bool) error {
	if outW <= 0 || outH <= 0 || outW > maxOutput || outH > maxOutput {
		return fmt.Errorf("jpeg: bad output size %dx%d", outW, outH)
	}
	if need := outW * outH * 3; len(dst) < need {
		return fmt.Errorf("%w: have %d bytes, need %d for %dx%d pixels", ErrShortBuffer, len(dst), need, outW, outH)
	}
	if err := checkCrop(crop); err != nil {
		return err
	}
	buf, err := d.decodeRegion(data, crop, outW, outH)
	if err != nil {
		return err
	}
	d.resizeDecoded(dst, outW, outH, buf, crop, flip)
	return nil
}

// DecodeCropInto decodes the rectangle crop of the full-resolution image in
// data at its own size into dst, its rows stride bytes apart: the pixels
// DecodeCropResize gives for an output of the crop's size, written where
// the caller keeps them (a row range of a larger canvas) with no copy in
// between.
func (d *Decoder) DecodeCropInto(data []byte, crop image.Rectangle, dst []byte, stride int) error {
	w, h := crop.Dx(), crop.Dy()
	if err := checkCrop(crop); err != nil {
		return err
	}
	if w > maxOutput || h > maxOutput {
		return fmt.Errorf("jpeg: bad crop %v", crop)
	}
	if stride < 3*w {
		return fmt.Errorf("jpeg: stride %d under a row of %d pixels", stride, w)
	}
	if need := (h-1)*stride + 3*w; len(dst) < need {
		return fmt.Errorf("%w: have %d bytes, need %d for %dx%d pixels %d bytes apart", ErrShortBuffer, len(dst), need,
			w, h, stride)
	}
	buf, err := d.decodeRegion(data, crop, w, h) // at 8/8: a crop is never twice its own size
	if err != nil {
		return err
	}
	g := &d.g
	bstride := int(g.buf_w) * 3
	src := buf[(crop.Min.Y-int(g.buf_y))*bstride+(crop.Min.X-int(g.buf_x))*3:]
	for y := 0; y < h; y++ {
		copy(dst[y*stride:y*stride+3*w], src[y*bstride:])
	}
	return nil
}

// checkCrop refuses a crop that is empty or outside the image coordinates
// a JPEG can have.
func checkCrop(crop image.Rectangle) error {
	if crop.Empty() || crop.Min.X < 0 || crop.Min.Y < 0 || crop.Max.X > maxDimension || crop.Max.Y > maxDimension {
		return fmt.Errorf("jpeg: bad crop %v", crop)
	}
	return nil
}

// decodeRegion decodes the part of data that crop needs, at the DCT scale
// chooseScale picks for an outW×outH output, into d.scratch; d.g says where
// the decoded pixels lie.
func (d *Decoder) decodeRegion(data []byte, crop image.Rectangle, outW, outH int) ([]byte, error) {
	m := chooseScale(crop.Dx(), crop.Dy(), outW, outH)
	// Buffer bound. The C side may decode at 2/8 instead of 1/8 (see
	// ffj_decode). The decoded span is ceil(size*m/8), plus one pixel of
	// misalignment at the start and one margin column per side, at least 8
	// columns, plus less than one iMCU (32 pixels) from jpeg_crop_scanline.
	mb := max(m, 2)
	bw := max((crop.Dx()*mb+7)/8+1+2, 8) + 31
	bh := (crop.Dy()*mb+7)/8 + 1
	if n := bw * bh * 3; cap(d.scratch) < n {
		d.scratch = make([]byte, n)
	}
	buf := d.scratch[:cap(d.scratch)]
	g := &d.g
	*g = C.ffj_geom{
		scale_num: C.int(m),
		cx0:       C.int(crop.Min.X), cy0: C.int(crop.Min.Y),
		cx1: C.int(crop.Max.X), cy1: C.int(crop.Max.Y),
	}
	return buf, d.decode(data, g, buf)
}

// resizeDecoded resizes the crop out of the pixels decodeRegion left in buf.
func (d *Decoder) resizeDecoded(dst []byte, outW, outH int, buf []byte, crop image.Rectangle, flip bool) {
	g := &d.g
	m := int(g.scale_num)
	bx, by := int(g.buf_x), int(g.buf_y)
	w, h := int(g.buf_w), int(g.buf_h)
	stride := w * 3
	if m == 8 {
		off := (crop.Min.Y-by)*stride + (crop.Min.X-bx)*3
		d.rs.ResizeAreaFlip(dst, outW, outH, buf[off:], crop.Dx(), crop.Dy(), stride, 3, flip)
		return
	}
	d.rs.ResizeAreaRegionFlip(dst, outW, outH, buf, w, h, stride, 3, scaledRegion(crop, m, bx, by), flip)
}

// maxOutput bounds the output size so that sizes never overflow.
const maxOutput = 1 << 20

// chooseScale returns the numerator m of the DCT scale factor m/8 to decode
// a cw×ch crop that will be resized to ow×oh: the smallest of 1/8, 1/4, 3/8
// and 1/2 for which the scaled crop still covers the output in both
// dimensions, so the final resize only shrinks, or 8/8 when none does.
//
// libjpeg-turbo also offers 5/8, 6/8 and 7/8, but their IDCTs are plain C
// and cost more than the SIMD 8/8 IDCT they would replace (on a 400×300
// q90 photo: 5/8 1.0×, 6/8 1.3×, 7/8 1.6× the CPU time of 8/8, while 3/8
// costs what 1/2 does; BenchmarkDecodeScale), so they never pay off.
func chooseScale(cw, ch, ow, oh int) int {
	for _, m := range []int{1, 2, 3, 4} {
		if cw*m >= 8*ow && ch*m >= 8*oh {
			return m
		}
	}
	return 8
}

// scaledRegion maps crop (full-resolution pixels) into the coordinates of a
// decoded buffer whose first pixel is scaled pixel (bx, by) at scale m/8.
// Scaled pixel j covers full-resolution [8j/m, 8(j+1)/m), so the mapping is
// a plain multiplication, exact in float64 for m in {1, 2, 3, 4}.
func scaledRegion(crop image.Rectangle, m, bx, by int) imgproc.RectF {
	s := float64(m) / 8
	return imgproc.RectF{
		X0: float64(crop.Min.X)*s - float64(bx),
		Y0: float64(crop.Min.Y)*s - float64(by),
		X1: float64(crop.Max.X)*s - float64(bx),
		Y1: float64(crop.Max.Y)*s - float64(by),
	}
}
