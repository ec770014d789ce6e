package imgproc

import (
	"fmt"
	"math"
)

// dblEpsilon is C's DBL_EPSILON; OpenCV uses it to decide whether a scale
// factor is an exact integer.
const dblEpsilon = 2.220446049250313e-16

// ResizeArea resizes the sw×sh source image src (rows srcStride bytes apart,
// channels bytes per pixel) into dst, a tightly packed dw×dh image, with the
// semantics of OpenCV's cv2.resize(src, (dw, dh), interpolation=INTER_AREA):
// box-filter averaging when shrinking both axes, and OpenCV's bilinear
// variant with INTER_AREA coefficients when either axis grows.
//
// It allocates its tables on every call; use a Resizer in loops.
// It panics if a dimension is not positive or a buffer is too small.
func ResizeArea(dst []byte, dw, dh int, src []byte, sw, sh, srcStride, channels int) {
	var r Resizer
	r.ResizeArea(dst, dw, dh, src, sw, sh, srcStride, channels)
}

// Resizer caches the weight tables and scratch rows of the last geometry it
// resized, so repeated resizes of the same shape do not allocate.
// The zero value is ready to use. A Resizer must not be used concurrently.
type Resizer struct {
	key  geomKey
	x, y taps      // area tables (box filter), per axis
	fx   fixedTaps // x padded to a constant tap count
	lx   linTab
	ly   linTab
	sx   linPairs // lx for the C kernels: mirrored when flipping, no edge case
	sy   linPairs

	fbuf  []float32 // one horizontally filtered row
	fsum  []float32 // vertical accumulator
	fwx   []float32 // horizontal weights laid out for the AVX2 kernel
	ibuf  []int32   // integer row sums or fixed-point rows
	ibuf2 []int32
}

type resizeMode uint8

const (
	modeArea resizeMode = iota + 1
	modeLinear
	modeLinearGo
	modeRegion
)

// geomKey identifies the geometry the cached tables were built for.
type geomKey struct {
	mode               resizeMode
	sw, sh, dw, dh, cn int
	region             RectF
	flip               bool
	linear             bool // INTER_LINEAR's tables, not INTER_AREA's
}

// ResizeArea is the table-caching form of the package-level ResizeArea.
func (r *Resizer) ResizeArea(dst []byte, dw, dh int, src []byte, sw, sh, srcStride, channels int) {
	r.ResizeAreaFlip(dst, dw, dh, src, sw, sh, srcStride, channels, false)
}

// ResizeAreaFlip is ResizeArea followed, when flip is set, by a horizontal
// mirror of the result. The mirror costs nothing on the common paths: the
// horizontal weight table is built mirrored, so rows come out flipped.
func (r *Resizer) ResizeAreaFlip(dst []byte, dw, dh int, src []byte, sw, sh, srcStride, channels int, flip bool) {
	checkArgs("ResizeArea", dst, dw, dh, src, sw, sh, srcStride, channels)
	if sw == dw && sh == dh {
		copyRows(dst, src, dw*channels, srcStride, dh)
		flipAfter(dst, dw, dh, channels, flip)
		return
	}
	// The scale computation mirrors cv::resize exactly, including the
	// DBL_EPSILON test, because it decides which code path (and therefore
	// which rounding) OpenCV uses.
	invX, invY := float64(dw)/float64(sw), float64(dh)/float64(sh)
	scaleX, scaleY := 1/invX, 1/invY
	if scaleX >= 1 && scaleY >= 1 {
		ix, iy := math.Round(scaleX), math.Round(scaleY)
		if math.Abs(scaleX-ix) < dblEpsilon && math.Abs(scaleY-iy) < dblEpsilon {
			r.areaFast(dst, dw, dh, src, srcStride, channels, int(ix), int(iy))
			flipAfter(dst, dw, dh, channels, flip)
			return
		}
		r.prepareArea(sw, sh, dw, dh, channels, scaleX, scaleY, flip)
		r.runArea(dst, dw, dh, src, sw, srcStride, channels)
		return
	}
	simd := useSIMD(sw, channels)
	r.prepareLinear(sw, sh, dw, dh, channels, scaleX, scaleY, invX, invY, flip, simd, false)
	if simd {
		r.linearRunSIMD(dst, dw, dh, src, sh, srcStride)
		return
	}
	r.linearRun(dst, dw, dh, src, sh, srcStride, channels)
	flipAfter(dst, dw, dh, channels, flip)
}

// ResizeLinear resizes like ResizeArea (same arguments) with the semantics
// of OpenCV's cv2.resize(src, (dw, dh), interpolation=INTER_LINEAR) on
// 8-bit images: bilinear weights at half-pixel centres, in OpenCV's 11-bit
// fixed point, the edges clamped. At exactly half size on both axes OpenCV
// takes its INTER_AREA path, and so does this.
func (r *Resizer) ResizeLinear(dst []byte, dw, dh int, src []byte, sw, sh, srcStride, channels int) {
	checkArgs("ResizeLinear", dst, dw, dh, src, sw, sh, srcStride, channels)
	if sw == dw && sh == dh {
		copyRows(dst, src, dw*channels, srcStride, dh)
		return
	}
	invX, invY := float64(dw)/float64(sw), float64(dh)/float64(sh)
	scaleX, scaleY := 1/invX, 1/invY
	if sw == 2*dw && sh == 2*dh {
		r.areaFast(dst, dw, dh, src, srcStride, channels, 2, 2)
		return
	}
	simd := useSIMD(sw, channels)
	r.prepareLinear(sw, sh, dw, dh, channels, scaleX, scaleY, invX, invY, false, simd, true)
	if simd {
		r.linearRunSIMD(dst, dw, dh, src, sh, srcStride)
		return
	}
	r.linearRun(dst, dw, dh, src, sh, srcStride, channels)
}

// useSIMD reports whether the C kernels handle a source sw pixels wide:
// they do 3 channels, and read pixel pairs, so at least 2 pixels a row.
func useSIMD(sw, channels int) bool { return haveSIMD && channels == 3 && sw >= 2 }

// runArea runs the area tables prepared for the current geometry, mirrored
// or not; the Go and C kernels give identical bytes.
func (r *Resizer) runArea(dst []byte, dw, dh int, src []byte, sw, srcStride, channels int) {
	if useSIMD(sw, channels) {
		r.areaRunSIMD(dst, dw, dh, src, srcStride)
		return
	}
	r.areaRun(dst, dw, dh, src, srcStride, channels)
}

// flipAfter mirrors the rows of a dw×dh image when flip is set, for the
// paths whose tables cannot be mirrored.
func flipAfter(img []byte, dw, dh, cn int, flip bool) {
	if !flip {
		return
	}
	rowLen := dw * cn
	for y := 0; y < dh; y++ {
		row := img[y*rowLen : (y+1)*rowLen]
		for l, r := 0, dw-1; l < r; l, r = l+1, r-1 {
			for c := 0; c < cn; c++ {
				row[l*cn+c], row[r*cn+c] = row[r*cn+c], row[l*cn+c]
			}
		}
	}
}

func checkArgs(fn string, dst []byte, dw, dh int, src []byte, sw, sh, srcStride, channels int) {
	if dw <= 0 || dh <= 0 || sw <= 0 || sh <= 0 || channels <= 0 {
		panic(fmt.Sprintf("imgproc: %s: bad size %dx%d -> %dx%d, %d channels", fn, sw, sh, dw, dh, channels))
	}
	if srcStride < sw*channels {
		panic(fmt.Sprintf("imgproc: %s: stride %d < row size %d", fn, srcStride, sw*channels))
	}
	if need := (sh-1)*srcStride + sw*channels; len(src) < need {
		panic(fmt.Sprintf("imgproc: %s: src has %d bytes, need %d", fn, len(src), need))
	}
	if need := dw * dh * channels; len(dst) < need {
		panic(fmt.Sprintf("imgproc: %s: dst has %d bytes, need %d", fn, len(dst), need))
	}
}

func copyRows(dst, src []byte, rowBytes, srcStride, rows int) {
	for y := 0; y < rows; y++ {
		copy(dst[y*rowBytes:(y+1)*rowBytes], src[y*srcStride:y*srcStride+rowBytes])
	}
}

// growF32 returns a slice of n float32s, reusing s when it is big enough.
func growF32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func growI32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// sat8 rounds like OpenCV's saturate_cast<uchar>(float): round half to even
// (cvRound), then clamp. Adding 1.5·2^23 makes the FPU do the rounding: the
// integer lands in the low mantissa bits. Valid for |v| < 2^22.
func sat8(v float32) uint8 {
	i := int32(math.Float32bits(float32(v)+0x1.8p23)&0x7fffff) - 0x400000
	return uint8(min(max(i, 0), 255))
}
