package pipeline

import "math"

// sharpen is tvSharpness (the policies' Sharpness: F.adjust_sharpness) in
// integer arithmetic, byte for byte. The smoothed value is
// round((S + 4c)/13) for S the 3×3 sum and c the centre: the exact
// quotient is never within 1/26 of a rounding tie, far beyond the float32
// sum's error, so torch's float kernel rounds to the same integer. The
// blend trunc(float32(x + d·alpha)), d = blur - x, is x + floor(d·alpha)
// (x + d·alpha is exact in float64) unless the fraction lies within
// float32's rounding of 1, where the float32 rounding may carry: those d
// take torch's float steps.
func sharpen(img, scratch []byte, h, w, ch int, f float64) {
	if h <= 2 || w <= 2 {
		return
	}
	copy(scratch, img)
	alpha := float32(1 - f)
	const carry = math.MinInt32
	var step [511]int32 // by d + 255
	for d := -255; d <= 255; d++ {
		e := float64(d) * float64(alpha)
		fl := math.Floor(e)
		// Below 256 a float32's half ulp is 2^-17 at most; beyond, both clamp.
		if e-fl > 1-0x1p-12 {
			step[d+255] = carry
		} else {
			step[d+255] = int32(max(min(fl, 1024), -1024))
		}
	}
	stride := w * ch
	var colBuf [4096]uint16
	for y := 1; y < h-1; y++ {
		up := scratch[(y-1)*stride : y*stride]
		mid := scratch[y*stride : (y+1)*stride]
		dn := scratch[(y+1)*stride : (y+2)*stride]
		row := img[y*stride : (y+1)*stride]
		// Column sums of the three rows, then each 3×3 sum is three of them.
		var cols []uint16
		if stride <= len(colBuf) {
			cols = colBuf[:stride]
		} else {
			cols = make([]uint16, stride)
		}
		for i := range cols {
			cols[i] = uint16(up[i]) + uint16(mid[i]) + uint16(dn[i])
		}
		for i := ch; i < stride-ch; i++ {
			c := int32(mid[i])
			s := int32(cols[i-ch]) + int32(cols[i]) + int32(cols[i+ch]) + 4*c
			blur := (2*s + 13) / 26
			st := step[blur-c+255]
			if st == carry {
				x := float32(c)
				row[i] = truncU8(fma32(float32(blur)-x, alpha, x))
				continue
			}
			v := c + st
			if uint32(v) > 255 {
				v = ^(v >> 31) & 255 // 0 below, 255 above
			}
			row[i] = byte(v)
		}
	}
}
