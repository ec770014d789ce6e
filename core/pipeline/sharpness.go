package pipeline

import "math"

// smoothed[s] is round(s/13) for s = S + 4c up to 13·255: a load is
// cheaper than the division.
var smoothed = func() (t [4096]uint8) {
	for s := range 13*255 + 1 {
		t[s] = uint8((2*s + 13) / 26)
	}
	return t
}()

// sharpenCarry marks a blend step taking torch's float steps.
const sharpenCarry = math.MinInt32

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
	var step [512]int32 // by d + 255; a power of two, so a mask elides bounds checks
	for d := -255; d <= 255; d++ {
		e := float64(d) * float64(alpha)
		fl := math.Floor(e)
		// Below 256 a float32's half ulp is 2^-17 at most; beyond, both clamp.
		if e-fl > 1-0x1p-12 {
			step[d+255] = sharpenCarry
		} else {
			step[d+255] = int32(max(min(fl, 1024), -1024))
		}
	}
	stride := w * ch
	n := stride - 2*ch // a row's interior
	// Column sums of three rows, then each 3×3 sum is three of them; a
	// chunk of the row at a time, in a buffer on the stack.
	var colBuf [4096]uint16
	chunk := len(colBuf) - 2*ch
	for y := 1; y < h-1; y++ {
		up := scratch[(y-1)*stride : y*stride]
		mid := scratch[y*stride : (y+1)*stride]
		dn := scratch[(y+1)*stride : (y+2)*stride]
		row := img[y*stride : (y+1)*stride]
		for a := 0; a < n; a += chunk {
			m := min(chunk, n-a)
			cols := colBuf[:m+2*ch]
			u, c, d := up[a:a+len(cols)], mid[a:a+len(cols)], dn[a:a+len(cols)]
			for i := range cols {
				cols[i] = uint16(u[i]) + uint16(c[i]) + uint16(d[i])
			}
			sharpenRun(row[a+ch:a+ch+m], mid[a+ch:a+ch+m], cols[:m], cols[ch:ch+m], cols[2*ch:2*ch+m], &step, alpha)
		}
	}
}

// sharpenRun sharpens a run of a row: outs from the centres mids and the
// column sums to their left, at them and to their right. Windows of one
// length let the compiler drop the bounds checks.
func sharpenRun(outs, mids []byte, left, centre, right []uint16, step *[512]int32, alpha float32) {
	mids, left, centre, right = mids[:len(outs)], left[:len(outs)], centre[:len(outs)], right[:len(outs)]
	for i := range outs {
		c := uint32(mids[i])
		s := uint32(left[i]) + uint32(centre[i]) + uint32(right[i]) + 4*c
		blur := uint32(smoothed[s&4095])
		st := step[(blur+255-c)&511]
		if st == sharpenCarry {
			x := float32(c)
			outs[i] = truncU8(fma32(float32(blur)-x, alpha, x))
			continue
		}
		v := int32(c) + st
		if uint32(v) > 255 {
			v = ^(v >> 31) & 255 // 0 below, 255 above
		}
		outs[i] = byte(v)
	}
}
