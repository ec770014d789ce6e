package imgproc

import "math"

// OpenCV's fixed-point bilinear resize uses 11-bit coefficients.
const (
	coefBits  = 11
	coefScale = 1 << coefBits
)

// linTab is one axis of OpenCV's bilinear table: output index i reads source
// indexes ofs[i] and ofs[i]+1 with weights a0[i] and a1[i] (sum ≈ 2048).
type linTab struct {
	ofs    []int32
	a0, a1 []int32
	limit  int // first output index whose right neighbour is off the edge
}

// build mirrors the coefficient loop of cv::resize for INTER_AREA when an
// axis is upscaled ("area_mode"): sx = floor(dx*scale) and the fractional
// weight is (dx+1) - (sx+1)/scale, wrapped to [0,1).
// With linear set it is cv::resize's INTER_LINEAR loop instead: the source
// point is (dx+0.5)·scale - 0.5 (in float32), clamped to the first pixel.
//
// rows is set for the vertical axis of INTER_LINEAR: OpenCV keeps the
// fraction of an output row whose source point lies above the first row or
// below the last (s = -1 or ssize-1), weighting the edge row twice, and
// the two products round separately.
func (t *linTab) build(ssize, dsize int, scale, inv float64, linear, rows bool) {
	t.ofs = growI32(t.ofs, dsize)
	t.a0 = growI32(t.a0, dsize)
	t.a1 = growI32(t.a1, dsize)
	t.limit = dsize
	for d := 0; d < dsize; d++ {
		var s int
		var f float32
		if linear {
			fx := float32((float64(d)+0.5)*scale - 0.5)
			s = int(math.Floor(float64(fx)))
			f = fx - float32(s)
			if s < 0 && !rows {
				s, f = 0, 0
			}
		} else {
			s = int(math.Floor(float64(d) * scale))
			f = float32(float64(d+1) - float64(float64(s+1)*inv))
			if f <= 0 {
				f = 0
			} else {
				f -= float32(math.Floor(float64(f)))
			}
		}
		if s+1 >= ssize {
			t.limit = min(t.limit, d)
			if s >= ssize-1 && !(linear && rows) {
				f, s = 0, ssize-1
			}
		}
		t.ofs[d] = int32(s)
		t.a0[d] = int32(math.RoundToEven(float64((1 - f) * coefScale)))
		t.a1[d] = int32(math.RoundToEven(float64(f * coefScale)))
	}
}

// With simd it also builds the C kernels' tables, the horizontal one
// mirrored when flip is set.
func (r *Resizer) prepareLinear(sw, sh, dw, dh, cn int, scaleX, scaleY, invX, invY float64, flip, simd, linear bool) {
	k := geomKey{mode: modeLinear, sw: sw, sh: sh, dw: dw, dh: dh, cn: cn, flip: flip, linear: linear}
	if !simd {
		k.mode = modeLinearGo // the C tables are not built
	}
	if r.key == k {
		return
	}
	r.key = geomKey{}
	r.lx.build(sw, dw, scaleX, invX, linear, false)
	r.ly.build(sh, dh, scaleY, invY, linear, true)
	if simd {
		r.sx.fromX(&r.lx, sw, flip)
		r.sy.fromY(&r.ly)
	}
	r.key = k
}

// linPairs is a linTab for the C kernels: index i reads source ofs[i] and
// ofs[i]+1 with the int16 weights a[2i] and a[2i+1].
type linPairs struct {
	ofs []int32
	a   []int16
}

func (p *linPairs) grow(n int) {
	p.ofs = growI32(p.ofs, n)
	if cap(p.a) < 2*n {
		p.a = make([]int16, 2*n)
	}
	p.a = p.a[:2*n]
}

// fromX converts t (for a source sw >= 2 pixels wide), mirrored when flip is
// set. OpenCV's edge copies (indexes from t.limit on read pixel sw-1 times
// 2048) become the pair (sw-2, sw-1) with weights (0, 2048): the same
// value, without a second kind of pixel.
func (p *linPairs) fromX(t *linTab, sw int, flip bool) {
	n := len(t.ofs)
	p.grow(n)
	for i := 0; i < n; i++ {
		d := i
		if flip {
			d = n - 1 - i
		}
		s, a0, a1 := t.ofs[d], t.a0[d], t.a1[d]
		if d >= t.limit {
			s, a0, a1 = int32(sw-2), 0, coefScale
		}
		p.ofs[i], p.a[2*i], p.a[2*i+1] = s, int16(a0), int16(a1)
	}
}

// fromY copies t's weights; the kernel clamps the rows itself.
func (p *linPairs) fromY(t *linTab) {
	n := len(t.ofs)
	p.grow(n)
	copy(p.ofs, t.ofs)
	for i := 0; i < n; i++ {
		p.a[2*i], p.a[2*i+1] = int16(t.a0[i]), int16(t.a1[i])
	}
}

// linearRun is OpenCV's resizeGeneric_ with the fixed-point HResizeLinear /
// VResizeLinear pair for 8-bit data. The vertical step uses the formula of
// OpenCV's SIMD kernel (VResizeLinearVec_32s8u), which covers all but the
// last few pixels of each row there.
func (r *Resizer) linearRun(dst []byte, dw, dh int, src []byte, sh, srcStride, cn int) {
	rowLen := dw * cn
	r.ibuf = growI32(r.ibuf, rowLen)
	r.ibuf2 = growI32(r.ibuf2, rowLen)
	// Two filtered rows are cached; sy never decreases, so the row below
	// becomes the row above as dy advances.
	rows := [2][]int32{r.ibuf, r.ibuf2}
	have := [2]int{-1, -1}
	for dy := 0; dy < dh; dy++ {
		sy := int(r.ly.ofs[dy])
		y0, y1 := max(0, min(sy, sh-1)), min(sy+1, sh-1) // sy = -1 above the first row
		if have[0] != y0 {
			if have[1] == y0 {
				rows[0], rows[1] = rows[1], rows[0]
				have[0], have[1] = have[1], have[0]
			} else {
				r.hlinear(rows[0], src[y0*srcStride:], cn)
				have[0] = y0
			}
		}
		s0, s1 := rows[0], rows[0]
		if y1 != y0 {
			if have[1] != y1 {
				r.hlinear(rows[1], src[y1*srcStride:], cn)
				have[1] = y1
			}
			s1 = rows[1]
		}
		s1 = s1[:len(s0)]
		b0, b1 := r.ly.a0[dy], r.ly.a1[dy]
		out := dst[dy*rowLen : (dy+1)*rowLen]
		out = out[:len(s0)]
		if dy > 0 && r.ly.ofs[dy-1] == r.ly.ofs[dy] && r.ly.a0[dy-1] == b0 && r.ly.a1[dy-1] == b1 {
			// Same source rows and weights as the row above (upscaling
			// repeats rows): the same output.
			copy(out, dst[(dy-1)*rowLen:dy*rowLen])
			continue
		}
		if b1 == 0 && b0 == coefScale {
			// INTER_AREA upscaling mostly repeats source rows: the same
			// arithmetic as below with the second term zero.
			for i, v := range s0 {
				x := ((v>>4)<<coefBits)>>16 + 2
				x >>= 2
				out[i] = uint8(x | (255-x)>>31)
			}
			continue
		}
		for i, v := range s0 {
			x := ((v>>4)*b0)>>16 + ((s1[i]>>4)*b1)>>16
			x = (x + 2) >> 2
			// x >= 0 (all terms are); saturate at 255 without a branch.
			out[i] = uint8(x | (255-x)>>31)
		}
	}
}

// hlinear resamples one source row horizontally into 2048-scaled integers.
func (r *Resizer) hlinear(buf []int32, row []byte, cn int) {
	t := &r.lx
	dw := len(buf) / cn
	lim := min(t.limit, dw)
	ofs, a0s, a1s := t.ofs[:lim], t.a0[:lim], t.a1[:lim]
	if cn == 3 {
		for dx, s := range ofs {
			a0, a1 := a0s[dx], a1s[dx]
			p := row[int(s)*3 : int(s)*3+6 : int(s)*3+6]
			o := buf[dx*3 : dx*3+3 : dx*3+3]
			o[0] = int32(p[0])*a0 + int32(p[3])*a1
			o[1] = int32(p[1])*a0 + int32(p[4])*a1
			o[2] = int32(p[2])*a0 + int32(p[5])*a1
		}
	} else {
		for dx, s := range ofs {
			a0, a1 := a0s[dx], a1s[dx]
			p := row[int(s)*cn : int(s)*cn+2*cn]
			o := buf[dx*cn : (dx+1)*cn]
			for c := range o {
				o[c] = int32(p[c])*a0 + int32(p[c+cn])*a1
			}
		}
	}
	// Past t.limit the right neighbour is off the edge: OpenCV copies.
	for dx := lim; dx < dw; dx++ {
		s := int(t.ofs[dx]) * cn
		o := buf[dx*cn : (dx+1)*cn]
		for c := range o {
			o[c] = int32(row[s+c]) * coefScale
		}
	}
}
