package imgproc

import "fmt"

// PadTopLeft copies the srcW×srcH image src (rows srcStride bytes apart, c
// bytes per pixel) to the top-left corner of the tightly packed dstW×dstH
// image dst and sets the rest of dst to zero (FFCV-SSL's pad). The source
// must fit.
func PadTopLeft(dst []byte, dstW, dstH int, src []byte, srcStride, srcW, srcH, c int) {
	rowLen, dstRow := srcW*c, dstW*c
	if srcW > dstW || srcH > dstH || len(dst) < dstRow*dstH || (srcH > 0 && len(src) < (srcH-1)*srcStride+rowLen) {
		panic(fmt.Sprintf("imgproc: PadTopLeft: %dx%d into %dx%d, %d and %d bytes", srcW, srcH, dstW, dstH, len(src), len(dst)))
	}
	for y := 0; y < srcH; y++ {
		row := dst[y*dstRow : (y+1)*dstRow]
		copy(row, src[y*srcStride:y*srcStride+rowLen])
		clear(row[rowLen:])
	}
	clear(dst[srcH*dstRow : dstH*dstRow])
}

// FillRGB sets every pixel of the RGB image img to fill: one pixel, then
// copies doubling what is done, so that memmove does the work in a few
// calls rather than a call per pixel.
func FillRGB(img []byte, fill [3]byte) {
	if len(img) < 3 {
		return
	}
	copy(img, fill[:])
	for n := 3; n < len(img); n *= 2 {
		copy(img[n:], img[:n])
	}
}
