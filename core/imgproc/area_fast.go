package imgproc

// areaFast is OpenCV's resizeAreaFast_: every output pixel is the mean of an
// exact kx×ky block. Block sums are accumulated in integers, then rounded
// the way OpenCV rounds: (sum+2)>>2 for 2×2 blocks of 1, 3 or 4 channels
// (its SIMD and matching scalar code), sum*(1.f/area) with cvRound otherwise.
func (r *Resizer) areaFast(dst []byte, dw, dh int, src []byte, srcStride, cn, kx, ky int) {
	rowLen := dw * cn
	srcLen := rowLen * kx // source bytes that feed one output row
	r.ibuf = growI32(r.ibuf, rowLen)
	acc := r.ibuf
	twoByTwo := kx == 2 && ky == 2 && (cn == 1 || cn == 3 || cn == 4)
	inv := 1 / float32(kx*ky)
	for dy := 0; dy < dh; dy++ {
		clear(acc)
		for j := 0; j < ky; j++ {
			row := src[(dy*ky+j)*srcStride:]
			hsum(acc, row[:srcLen], kx, cn)
		}
		out := dst[dy*rowLen : (dy+1)*rowLen]
		out = out[:len(acc)]
		if twoByTwo {
			for i, s := range acc {
				out[i] = uint8((s + 2) >> 2)
			}
		} else {
			for i, s := range acc {
				out[i] = sat8(float32(s) * inv)
			}
		}
	}
}

// hsum adds the sums of runs of kx horizontally adjacent pixels of row to acc.
func hsum(acc []int32, row []byte, kx, cn int) {
	switch {
	case kx == 1:
		row = row[:len(acc)]
		for i, v := range row {
			acc[i] += int32(v)
		}
	case kx == 2 && cn == 3:
		for i := 0; i+2 < len(acc); i += 3 {
			p := row[2*i : 2*i+6 : 2*i+6]
			a := acc[i : i+3 : i+3]
			a[0] += int32(p[0]) + int32(p[3])
			a[1] += int32(p[1]) + int32(p[4])
			a[2] += int32(p[2]) + int32(p[5])
		}
	case kx == 2 && cn == 1:
		for i := range acc {
			p := row[2*i : 2*i+2 : 2*i+2]
			acc[i] += int32(p[0]) + int32(p[1])
		}
	default:
		for i := range acc {
			dx, c := i/cn, i%cn
			p := row[dx*kx*cn+c:]
			var s int32
			for k := 0; k < kx; k++ {
				s += int32(p[k*cn])
			}
			acc[i] += s
		}
	}
}
