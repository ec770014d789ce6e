package imgproc

import (
	"fmt"
	"image"
)

// SubRect returns the part of src (rows stride bytes apart, channels bytes
// per pixel) that starts at r.Min and ends after r's last pixel, without
// copying; rows of the result are still stride bytes apart.
func SubRect(src []byte, stride, channels int, r image.Rectangle) []byte {
	if r.Empty() || r.Min.X < 0 || r.Min.Y < 0 || r.Max.X*channels > stride {
		panic(fmt.Sprintf("imgproc: SubRect: bad rectangle %v for stride %d", r, stride))
	}
	start := r.Min.Y*stride + r.Min.X*channels
	end := (r.Max.Y-1)*stride + r.Max.X*channels
	return src[start:end]
}

// Crop copies rectangle r of src (rows stride bytes apart) into a tightly
// packed image and returns it. It reuses dst when it has room and allocates
// otherwise, like the append-style functions of the standard library.
func Crop(dst, src []byte, stride, channels int, r image.Rectangle) []byte {
	sub := SubRect(src, stride, channels, r)
	rowLen, h := r.Dx()*channels, r.Dy()
	n := rowLen * h
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	copyRows(dst, sub, rowLen, stride, h)
	return dst
}

// FlipHorizontal mirrors the tightly packed w×h image img (c bytes per
// pixel) left to right, in place.
func FlipHorizontal(img []byte, w, h, c int) {
	rowLen := w * c
	if len(img) < rowLen*h {
		panic(fmt.Sprintf("imgproc: FlipHorizontal: %d bytes, need %d", len(img), rowLen*h))
	}
	for y := 0; y < h; y++ {
		row := img[y*rowLen : (y+1)*rowLen]
		switch c {
		case 3:
			for i, j := 0, rowLen-3; i < j; i, j = i+3, j-3 {
				a, b := row[i:i+3:i+3], row[j:j+3:j+3]
				a[0], a[1], a[2], b[0], b[1], b[2] = b[0], b[1], b[2], a[0], a[1], a[2]
			}
		case 1:
			for i, j := 0, rowLen-1; i < j; i, j = i+1, j-1 {
				row[i], row[j] = row[j], row[i]
			}
		default:
			for i, j := 0, rowLen-c; i < j; i, j = i+c, j-c {
				for k := 0; k < c; k++ {
					row[i+k], row[j+k] = row[j+k], row[i+k]
				}
			}
		}
	}
}
