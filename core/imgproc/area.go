package imgproc

// prepareArea builds (or reuses) OpenCV's fractional INTER_AREA tables.
// With flip the horizontal table is mirrored, so the output comes out flipped.
func (r *Resizer) prepareArea(sw, sh, dw, dh, cn int, scaleX, scaleY float64, flip bool) {
	k := geomKey{mode: modeArea, sw: sw, sh: sh, dw: dw, dh: dh, cn: cn, flip: flip}
	if r.key == k {
		return
	}
	r.key = geomKey{}
	r.x.areaTaps(sw, dw, scaleX)
	r.fx.from(&r.x, sw)
	if flip {
		r.fx.mirror()
	}
	r.y.areaTaps(sh, dh, scaleY)
	r.key = k
}

// areaRun applies the separable box filter in r.x and r.y. It filters each
// needed source row horizontally once (OpenCV recomputes rows shared by two
// output rows; the sums are identical), then accumulates rows vertically in
// the same order as OpenCV's ResizeArea_Invoker, so float results match.
func (r *Resizer) areaRun(dst []byte, dw, dh int, src []byte, srcStride, cn int) {
	rowLen := dw * cn
	r.fbuf = growF32(r.fbuf, rowLen)
	r.fsum = growF32(r.fsum, rowLen)
	buf, sum := r.fbuf, r.fsum
	cached := -1
	for dy := 0; dy < dh; dy++ {
		sy0 := int(r.y.first[dy])
		ws := r.y.w[r.y.off[dy]:r.y.off[dy+1]]
		for k, beta := range ws {
			sy := sy0 + k
			if sy != cached {
				r.hfilter(buf, src[sy*srcStride:], cn)
				cached = sy
			}
			if k == 0 {
				for i, v := range buf {
					sum[i] = beta * v
				}
			} else {
				sum := sum[:len(buf)]
				for i, v := range buf {
					sum[i] += float32(beta * v)
				}
			}
		}
		out := dst[dy*rowLen : (dy+1)*rowLen]
		for i, v := range sum[:len(out)] {
			out[i] = sat8(v)
		}
	}
}

// hfilter box-filters one source row into buf (dw*cn floats) using r.fx.
// Products are converted to float32 before adding so the compiler cannot
// fuse them into FMAs that OpenCV's scalar code does not use.
func (r *Resizer) hfilter(buf []float32, row []byte, cn int) {
	t := &r.fx
	n := t.n
	switch {
	case cn == 3 && n == 2:
		for dx := 0; dx < len(buf)/3; dx++ {
			w := t.w[dx*2 : dx*2+2 : dx*2+2]
			s := int(t.first[dx]) * 3
			p := row[s : s+6 : s+6]
			o := buf[dx*3 : dx*3+3 : dx*3+3]
			o[0] = float32(u8f[p[0]]*w[0]) + float32(u8f[p[3]]*w[1])
			o[1] = float32(u8f[p[1]]*w[0]) + float32(u8f[p[4]]*w[1])
			o[2] = float32(u8f[p[2]]*w[0]) + float32(u8f[p[5]]*w[1])
		}
	case cn == 3 && n == 3:
		for dx := 0; dx < len(buf)/3; dx++ {
			w := t.w[dx*3 : dx*3+3 : dx*3+3]
			s := int(t.first[dx]) * 3
			p := row[s : s+9 : s+9]
			o := buf[dx*3 : dx*3+3 : dx*3+3]
			o[0] = float32(u8f[p[0]]*w[0]) + float32(u8f[p[3]]*w[1]) + float32(u8f[p[6]]*w[2])
			o[1] = float32(u8f[p[1]]*w[0]) + float32(u8f[p[4]]*w[1]) + float32(u8f[p[7]]*w[2])
			o[2] = float32(u8f[p[2]]*w[0]) + float32(u8f[p[5]]*w[1]) + float32(u8f[p[8]]*w[2])
		}
	case cn == 3 && n == 4:
		for dx := 0; dx < len(buf)/3; dx++ {
			w := t.w[dx*4 : dx*4+4 : dx*4+4]
			s := int(t.first[dx]) * 3
			p := row[s : s+12 : s+12]
			o := buf[dx*3 : dx*3+3 : dx*3+3]
			o[0] = float32(u8f[p[0]]*w[0]) + float32(u8f[p[3]]*w[1]) + float32(u8f[p[6]]*w[2]) + float32(u8f[p[9]]*w[3])
			o[1] = float32(u8f[p[1]]*w[0]) + float32(u8f[p[4]]*w[1]) + float32(u8f[p[7]]*w[2]) + float32(u8f[p[10]]*w[3])
			o[2] = float32(u8f[p[2]]*w[0]) + float32(u8f[p[5]]*w[1]) + float32(u8f[p[8]]*w[2]) + float32(u8f[p[11]]*w[3])
		}
	case cn == 3:
		for dx := 0; dx < len(buf)/3; dx++ {
			ws := t.w[dx*n : dx*n+n]
			s := int(t.first[dx]) * 3
			p := row[s : s+3*n]
			var s0, s1, s2 float32
			for _, w := range ws {
				if len(p) < 3 {
					break // unreachable; lets the compiler drop bounds checks
				}
				s0 += float32(u8f[p[0]] * w)
				s1 += float32(u8f[p[1]] * w)
				s2 += float32(u8f[p[2]] * w)
				p = p[3:]
			}
			o := buf[dx*3 : dx*3+3 : dx*3+3]
			o[0], o[1], o[2] = s0, s1, s2
		}
	case cn == 1:
		for dx := range buf {
			ws := t.w[dx*n : dx*n+n]
			p := row[t.first[dx]:]
			p = p[:len(ws)]
			var s float32
			for k, w := range ws {
				s += float32(u8f[p[k]] * w)
			}
			buf[dx] = s
		}
	default:
		for dx := 0; dx < len(buf)/cn; dx++ {
			ws := t.w[dx*n : dx*n+n]
			p := row[int(t.first[dx])*cn:]
			o := buf[dx*cn : (dx+1)*cn]
			for c := range o {
				var s float32
				for k, w := range ws {
					s += float32(u8f[p[k*cn+c]] * w)
				}
				o[c] = s
			}
		}
	}
}

// u8f maps a byte to float32 with a load: Go's int-to-float conversion has a
// false dependency on its destination register that serialises the loop.
var u8f = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(i)
	}
	return
}()
