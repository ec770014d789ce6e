package imgproc

import "fmt"

// RectF is a rectangle in continuous pixel coordinates: pixel (x, y) covers
// [x, x+1) × [y, y+1). Max is exclusive.
type RectF struct {
	X0, Y0, X1, Y1 float64
}

// ResizeAreaRegion box-filters the sub-pixel rectangle reg of the sw×sh
// source image into the tightly packed dw×dh image dst: every output pixel is
// the area-weighted mean of the source pixels under its cell. For an
// integer-aligned reg that is shrunk in both axes this equals ResizeArea of
// the cropped pixels up to OpenCV's rounding of its weight table.
//
// It panics if reg is empty or not inside the image, or a buffer is too small.
func (r *Resizer) ResizeAreaRegion(dst []byte, dw, dh int, src []byte, sw, sh, srcStride, channels int, reg RectF) {
	r.ResizeAreaRegionFlip(dst, dw, dh, src, sw, sh, srcStride, channels, reg, false)
}

// ResizeAreaRegionFlip is ResizeAreaRegion with the result mirrored
// horizontally when flip is set, at no extra cost.
func (r *Resizer) ResizeAreaRegionFlip(dst []byte, dw, dh int, src []byte, sw, sh, srcStride, channels int, reg RectF, flip bool) {
	checkArgs("ResizeAreaRegion", dst, dw, dh, src, sw, sh, srcStride, channels)
	if !(reg.X0 >= 0 && reg.Y0 >= 0 && reg.X1 <= float64(sw) && reg.Y1 <= float64(sh) &&
		reg.X0 < reg.X1 && reg.Y0 < reg.Y1) {
		panic(fmt.Sprintf("imgproc: ResizeAreaRegion: region %+v not inside %dx%d", reg, sw, sh))
	}
	k := geomKey{mode: modeRegion, sw: sw, sh: sh, dw: dw, dh: dh, cn: channels, region: reg, flip: flip}
	if r.key != k {
		r.key = geomKey{}
		r.x.regionTaps(sw, dw, reg.X0, reg.X1)
		r.fx.from(&r.x, sw)
		if flip {
			r.fx.mirror()
		}
		r.y.regionTaps(sh, dh, reg.Y0, reg.Y1)
		r.key = k
	}
	r.runArea(dst, dw, dh, src, sw, srcStride, channels)
}
