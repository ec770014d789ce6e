package imgproc

import (
	"math"
	"sync"
)

// Geometric kernels with torchvision's tensor semantics (F.affine, F.rotate
// on uint8 images): affine warps sample the input at the inverse-mapped
// centre of each output pixel as grid_sample(align_corners=False) does,
// nearest (round half to even) or bilinear, with zeros or a fill colour
// outside.

// InvAffine is torchvision's _get_inverse_affine_matrix: the matrix mapping
// output pixel coordinates (relative to the image centre) to input ones.
// Angles and shears are in degrees.
func InvAffine(cx, cy, angle, tx, ty, scale, shx, shy float64) [6]float64 {
	rot := angle * math.Pi / 180
	sx, sy := shx*math.Pi/180, shy*math.Pi/180
	cosSy, tanSx := math.Cos(sy), math.Tan(sx)
	a := math.Cos(rot-sy) / cosSy
	b := -(float64(a*tanSx) + math.Sin(rot))
	c := math.Sin(rot-sy) / cosSy
	d := math.Cos(rot) - float64(c*tanSx)
	m := [6]float64{d / scale, -b / scale, 0, -c / scale, a / scale, 0}
	cxt, cyt := cx+tx, cy+ty
	m[2] += cx - float64(m[0]*cxt) - float64(m[1]*cyt)
	m[5] += cy - float64(m[3]*cxt) - float64(m[4]*cyt)
	return m
}

// grid is the sampling grid of an inverse affine matrix on an h×w image:
// the input coordinates grid_sample(align_corners=False) reads for each
// output pixel, in torch's float32 steps.
type grid struct {
	t            [6]float32 // the matrix in normalised coordinates
	halfW, halfH float64
	cx, cy       float32 // the image centre
}

func newGrid(h, w int, m [6]float64) grid {
	hw, hh := float32(0.5*float64(w)), float32(0.5*float64(h))
	return grid{
		t: [6]float32{float32(m[0]) / hw, float32(m[1]) / hw, float32(m[2]) / hw,
			float32(m[3]) / hh, float32(m[4]) / hh, float32(m[5]) / hh},
		halfW: float64(float32(w) / 2), halfH: float64(float32(h) / 2),
		cx: float32(float32(w-1) * 0.5), cy: float32(float32(h-1) * 0.5),
	}
}

// rowTerms are row y's products of the base grid's y with theta. torch's
// CPU kernels are compiled with fused multiply-adds: the bmm of the base
// grid with theta accumulates the x term first, so gx = fma(by, t1, bx·t0).
// A float32 product is exact in float64, so a row's products are taken
// once and each fma is one float64 add.
func (g *grid) rowTerms(y int) (py1, py4 float64) {
	by := float32(y) - g.cy
	return float64(by) * float64(g.t[1]), float64(by) * float64(g.t[4])
}

// at is the input coordinate of output pixel x in the row with terms py1,
// py4. grid_sample unnormalises as fma(g + 1, size/2, -0.5). Shears like
// 0.2 put many coordinates on rounding ties, where another order picks
// other pixels.
func (g *grid) at(x int, py1, py4 float64) (ix, iy float32) {
	bx := float32(x) - g.cx
	gx := float32(py1+float64(bx*g.t[0])) + g.t[2]
	gy := float32(py4+float64(bx*g.t[3])) + g.t[5]
	return float32(float64(gx+1)*g.halfW - 0.5), float32(float64(gy+1)*g.halfH - 0.5)
}

// Warp fills dst (h, w, ch) by sampling src (same size) through the inverse
// matrix m, with torchvision's float32 steps (bit-exact on the tests' photos). fill nil is torchvision's
// fill=None (zeros, and bilinear edges fade to black); otherwise the mask
// form: out = (v - fill)·mask + fill.
func Warp(dst, src []byte, h, w, ch int, m [6]float64, bilinear bool, fill []float32) {
	g := newGrid(h, w, m)
	if !bilinear {
		warpNearest(dst, src, h, w, ch, &g, fill)
		return
	}
	for y := 0; y < h; y++ {
		py1, py4 := g.rowTerms(y)
		row := dst[y*w*ch : (y+1)*w*ch]
		for x := 0; x < w; x++ {
			ix, iy := g.at(x, py1, py4)
			o := row[x*ch : (x+1)*ch : (x+1)*ch]
			x0f, y0f := float32(math.Floor(float64(ix))), float32(math.Floor(float64(iy)))
			x0, y0 := int(x0f), int(y0f)
			// torch's weights: w, n the distances to the west and north
			// corners, e = 1-w, s = 1-n; nw, ne, sw, se summed in that order.
			we, no := ix-x0f, iy-y0f
			ea, so := 1-we, 1-no
			nw, ne, sw, se := float32(so*ea), float32(so*we), float32(no*ea), float32(no*we)
			if uint(x0) < uint(w-1) && uint(y0) < uint(h-1) {
				// All four corners inside: the common case, unrolled.
				p := src[(y0*w+x0)*ch:]
				q := src[((y0+1)*w+x0)*ch:]
				mask := float32(float32(float32(nw+ne)+sw) + se)
				// fma32's steps, with the weights widened once.
				dnw, dne, dsw, dse := float64(nw), float64(ne), float64(sw), float64(se)
				if ch == 3 && fill == nil {
					p, q := p[:6:6], q[:6:6]
					for c := 0; c < 3; c++ {
						v := float32(float64(p[c]) * dnw)
						v = float32(float64(p[c+3])*dne + float64(v))
						v = float32(float64(q[c])*dsw + float64(v))
						v = float32(float64(q[c+3])*dse + float64(v))
						o[c] = roundU8(v)
					}
					continue
				}
				for c := range o {
					v := float32(float64(p[c]) * dnw)
					v = float32(float64(p[c+ch])*dne + float64(v))
					v = float32(float64(q[c])*dsw + float64(v))
					v = float32(float64(q[c+ch])*dse + float64(v))
					if fill != nil {
						f := fill[c%len(fill)]
						v = float32(float32(v-f)*mask) + f
					}
					o[c] = roundU8(v)
				}
				continue
			}
			wts := [4]float32{nw, ne, sw, se}
			cxs := [4]int{x0, x0 + 1, x0, x0 + 1}
			cys := [4]int{y0, y0, y0 + 1, y0 + 1}
			var acc [4]float32
			var mask float32
			for k := 0; k < 4; k++ {
				if cxs[k] < 0 || cxs[k] >= w || cys[k] < 0 || cys[k] >= h {
					continue
				}
				p := src[(cys[k]*w+cxs[k])*ch:]
				for c := 0; c < ch; c++ {
					acc[c] = fma32(float32(p[c]), wts[k], acc[c])
				}
				mask += wts[k]
			}
			for c := 0; c < ch; c++ {
				v := acc[c]
				if fill != nil {
					f := fill[c%len(fill)]
					v = float32(float32(v-f)*mask) + f
				}
				o[c] = roundU8(v)
			}
		}
	}
}

// warpNearest is Warp's nearest sampling. The float32 steps cost more
// than the rest, so a row steps the exact (real) coordinates in 32.32 fixed
// point, one add per pixel, and rounds those; the float32 coordinates
// differ from them by a few float32 roundings, so only where the fixed
// point lies that close to a rounding tie does it take torch's steps.
func warpNearest(dst, src []byte, h, w, ch int, g *grid, fill []float32) {
	var outside [4]byte // a sample outside the image
	if fill != nil {
		for k := 0; k < ch; k++ {
			outside[k] = roundU8(fill[k%len(fill)])
		}
	}
	t := [6]float64{}
	for i, v := range g.t {
		t[i] = float64(v)
	}
	// Bound the float32 steps' error, in pixels: five roundings, each of at
	// most 2^-24 of a value no larger than the largest term times the half
	// size, with a 3x margin.
	big := math.Abs(t[0])*float64(w) + math.Abs(t[1])*float64(h) + math.Abs(t[2]) + 1
	big = max(big, math.Abs(t[3])*float64(w)+math.Abs(t[4])*float64(h)+math.Abs(t[5])+1)
	eps := 0x1p-20 * (big*max(g.halfW, g.halfH) + 1)
	const one = 1 << 32
	const fixLimit = 1 << 30
	tie := int64(eps*one) + 1<<12 // plus the fixed point's own drift
	near := uint32(min(tie, 1<<30))
	bx0 := float64(-g.cx)
	stepX, stepY := t[0]*g.halfW, t[3]*g.halfH
	if g.t[1] == 0 && tie < 1<<30 && warpColumns(dst, src, h, w, ch, g, t, near, &outside) {
		return
	}
	sample := func(o []byte, sx, sy int) {
		px := outside[:ch]
		if uint(sx) < uint(w) && uint(sy) < uint(h) {
			px = src[(sy*w+sx)*ch:]
		}
		copy(o, px)
	}
	for y := 0; y < h; y++ {
		py1, py4 := g.rowTerms(y)
		row := dst[y*w*ch : (y+1)*w*ch]
		by := float64(float32(y) - g.cy)
		vx := ((bx0*t[0]+by*t[1]+t[2])+1)*g.halfW - 0.5
		vy := ((bx0*t[3]+by*t[4]+t[5])+1)*g.halfH - 0.5
		ex, ey := vx+stepX*float64(w), vy+stepY*float64(w)
		if !(max(math.Abs(vx), math.Abs(vy), math.Abs(ex), math.Abs(ey)) < fixLimit) || tie >= 1<<30 {
			for x := 0; x < w; x++ {
				ix, iy := g.at(x, py1, py4)
				sample(row[x*ch:(x+1)*ch], int(math.RoundToEven(float64(ix))), int(math.RoundToEven(float64(iy))))
			}
			continue
		}
		// Fixed point plus a half: the integer part is the rounded
		// coordinate, the fraction near 0 (or 1) means near a tie.
		ax, ay := int64(math.Round((vx+0.5)*one)), int64(math.Round((vy+0.5)*one))
		dx, dy := int64(math.Round(stepX*one)), int64(math.Round(stepY*one))
		// A row reading one input row at a constant offset (ShearX,
		// translations) is a copy: ax - x·2^32 is linear in x, so if both
		// ends have one integer part and lie off the tie margin, so does
		// every pixel between.
		if end := ax + int64(w-1)*dx; dy == 0 && uint32(ay)+near >= 2*near &&
			uint32(ax)+near >= 2*near && uint32(end)+near >= 2*near && end>>32-int64(w-1) == ax>>32 {
			copyRow(row, src, h, w, ch, int(ay>>32), int(ax>>32), &outside)
			continue
		}
		// Each pixel with its checks, for the row's ends.
		each := func(x0, x1 int) {
			ax, ay := ax+int64(x0)*dx, ay+int64(x0)*dy
			for x := x0; x < x1; x++ {
				sx, sy := int(ax>>32), int(ay>>32)
				if uint32(ax)+near < 2*near || uint32(ay)+near < 2*near {
					ix, iy := g.at(x, py1, py4)
					sx, sy = int(math.RoundToEven(float64(ix))), int(math.RoundToEven(float64(iy)))
				}
				ax += dx
				ay += dy
				sample(row[x*ch:(x+1)*ch], sx, sy)
			}
		}
		// The pixels whose fixed point lies inside the image are an interval
		// of the row, where only ties need the checks.
		in := func(x int) bool {
			fx, fy := ax+int64(x)*dx, ay+int64(x)*dy
			return uint64(fx>>32) < uint64(w) && uint64(fy>>32) < uint64(h)
		}
		xa, xb := 0, w
		for xa < w && !in(xa) {
			xa++
		}
		for xb > xa && !in(xb-1) {
			xb--
		}
		each(0, xa)
		for x := xa; x < xb; x++ {
			fx, fy := ax+int64(x)*dx+int64(near), ay+int64(x)*dy+int64(near)
			if ch == 3 {
				x += copySpan3(row[x*3:xb*3], src, w*3, fx, fy, dx, dy, near)
			} else {
				x += copySpan1(row[x:xb], src, w, fx, fy, dx, dy, near)
			}
			if x < xb {
				each(x, x+1)
			}
		}
		each(xb, w)
	}
}

// copySpan3 copies 3-channel pixels into dst whose fixed-point
// coordinates, (fx, fy) stepping (dx, dy) and each biased by near, lie
// inside the image, up to the first near a tie, and returns how many it
// copied. Biased, a fraction under 2·near is near a tie, and otherwise
// the integer part is the rounded coordinate. Its own function keeps the
// loop's values in registers.
func copySpan3(dst, src []byte, stride int, fx, fy, dx, dy int64, near uint32) int {
	nn := 2 * near
	for o := 0; o+3 <= len(dst); o += 3 {
		if uint32(fx) < nn || uint32(fy) < nn {
			return o / 3
		}
		i := int(fy>>32)*stride + int(fx>>32)*3
		d, p := dst[o:o+3:o+3], src[i:i+3:i+3] // a call to memmove costs more than three bytes
		d[0], d[1], d[2] = p[0], p[1], p[2]
		fx += dx
		fy += dy
	}
	return len(dst) / 3
}

// copySpan1 is copySpan3 for one channel.
func copySpan1(dst, src []byte, stride int, fx, fy, dx, dy int64, near uint32) int {
	nn := 2 * near
	for o := range dst {
		if uint32(fx) < nn || uint32(fy) < nn {
			return o
		}
		dst[o] = src[int(fy>>32)*stride+int(fx>>32)]
		fx += dx
		fy += dy
	}
	return len(dst)
}

// warpColumns is warpNearest where the input column of a pixel depends
// only on its column (t[1] == 0: ShearY, translations) and the input row
// steps by about one per output row. Each column's input column and row
// offset are found once and every row is then a gather, which costs a
// fraction of stepping two coordinates per pixel. A column whose fixed
// point comes near a tie on some row is stepped pixel by pixel, with
// torch's steps at the ties. It reports
// false, having written nothing, where the matrix does not fit.
func warpColumns(dst, src []byte, h, w, ch int, g *grid, t [6]float64, near uint32, outside *[4]byte) bool {
	const one = 1 << 32
	const fixLimit = 1 << 30
	bx0, by0 := float64(-g.cx), float64(-g.cy)
	stepX, stepY := float64(t[3]*g.halfH), float64(t[4]*g.halfH)
	// The real input row of pixel (x, y) is vy + x·stepX + y·stepY.
	vy := float64(float64(float64(bx0*t[3])+float64(by0*t[4])+t[5]+1)*g.halfH) - 0.5
	dx, dy := int64(math.Round(stepX*one)), int64(math.Round(stepY*one))
	ends := []float64{vy, vy + float64(stepX*float64(w)), vy + float64(stepY*float64(h)),
		vy + float64(stepX*float64(w)) + float64(stepY*float64(h))}
	for _, e := range ends {
		if !(math.Abs(e) < fixLimit) {
			return false
		}
	}
	if d := dy - one; d < -1<<20 || d > 1<<20 {
		return false
	}
	sc := columnScratch.Get().(*columnRuns)
	defer columnScratch.Put(sc)
	stride := w * ch
	runs := sc.runs[:0]
	py1, py4 := g.rowTerms(0)
	a0 := int64(math.Round(float64(vy+0.5) * one))
	a := a0
	for x := 0; x < w; x, a = x+1, a+dx {
		ix, _ := g.at(x, py1, py4)
		sx := int(math.RoundToEven(float64(ix)))
		c := columnRun{x0: x, x1: x + 1, sx: sx}
		e := a + int64(h-1)*dy
		switch {
		case uint(sx) >= uint(w): // outside on every row
		case uint32(a)+near >= 2*near && uint32(e)+near >= 2*near && e>>32-int64(h-1) == a>>32:
			off := int(a >> 32)
			lo, hi := min(max(-off, 0), h), min(max(h-off, 0), h)
			c.base, c.lo, c.n = off*stride+sx*ch, lo, hi-lo
		default:
			c.slow = true
		}
		// Neighbouring columns reading neighbouring input columns over the
		// same rows are one copy per row.
		if k := len(runs) - 1; k >= 0 && !c.slow && !runs[k].slow && c.lo == runs[k].lo && c.n == runs[k].n &&
			(c.n == 0 || c.base == runs[k].base+(x-runs[k].x0)*ch) {
			runs[k].x1 = x + 1
			continue
		}
		runs = append(runs, c)
	}
	sc.runs = runs
	if cap(sc.blank) < stride {
		sc.blank = make([]byte, stride)
	}
	blank := sc.blank[:stride] // a row of outside pixels
	for i := 0; i < stride; i += ch {
		copy(blank[i:i+ch], outside[:ch])
	}
	for y := 0; y < h; y++ {
		row := dst[y*stride : (y+1)*stride]
		rs := y * stride
		for _, r := range runs {
			d := row[r.x0*ch : r.x1*ch]
			switch {
			case r.slow:
				ay := a0 + int64(r.x0)*dx + int64(y)*dy
				sy := int(ay >> 32)
				if uint32(ay)+near < 2*near {
					py1, py4 := g.rowTerms(y)
					_, iy := g.at(r.x0, py1, py4)
					sy = int(math.RoundToEven(float64(iy)))
				}
				px := outside[:ch]
				if uint(sy) < uint(h) {
					px = src[(sy*w+r.sx)*ch:]
				}
				copy(d, px)
			case uint(y-r.lo) < uint(r.n):
				copy(d, src[r.base+rs:])
			default:
				copy(d, blank)
			}
		}
	}
	return true
}

// columnRun is a run of warpColumns's output columns: input column sx
// onwards, input row y + off read from base + y·stride for rows lo to
// lo+n, outside elsewhere; or one column whose rows are found pixel by
// pixel.
type columnRun struct {
	x0, x1, sx, base, lo, n int
	slow                    bool
}

type columnRuns struct {
	runs  []columnRun
	blank []byte
}

var columnScratch = sync.Pool{New: func() any { return new(columnRuns) }}

// copyRow fills row (w pixels of ch) with input row sy from column off on,
// outside where that leaves the image.
func copyRow(row, src []byte, h, w, ch, sy, off int, outside *[4]byte) {
	a, b := min(max(-off, 0), w), min(max(w-off, 0), w)
	if sy < 0 || sy >= h {
		a, b = w, w
	} else if a < b {
		copy(row[a*ch:b*ch], src[(sy*w+a+off)*ch:])
	}
	for x := 0; x < a; x++ {
		copy(row[x*ch:(x+1)*ch], outside[:])
	}
	for x := b; x < w; x++ {
		copy(row[x*ch:(x+1)*ch], outside[:])
	}
}

// Shiftable says whether Shift gives Warp's pixels: torch's float32
// coordinates land within a hair of whole pixels, where nearest and
// bilinear sampling give the pixel itself, except that bilinear mixes a
// hair of the fill into the image's edges, which moves a fractional fill
// off a rounding tie.
func Shiftable(bilinear bool, fill []float32) bool {
	if !bilinear {
		return true
	}
	for _, f := range fill {
		if f != float32(math.Round(float64(f))) {
			return false
		}
	}
	return true
}

// Shift is Warp for a translation by whole pixels (dx, dy) where
// Shiftable: rows are copies.
func Shift(dst, src []byte, h, w, ch, dx, dy int, fill []float32) {
	var outside [4]byte
	if fill != nil {
		for k := 0; k < ch; k++ {
			outside[k] = roundU8(fill[k%len(fill)])
		}
	}
	for y := 0; y < h; y++ {
		copyRow(dst[y*w*ch:(y+1)*w*ch], src, h, w, ch, y-dy, -dx, &outside)
	}
}

// roundU8 is round-half-to-even then the uint8 cast, as torch's round_().to(uint8).
func roundU8(v float32) byte {
	r := math.RoundToEven(float64(v))
	if !(r > 0) {
		return 0
	}
	if r >= 255 {
		return 255
	}
	return byte(r)
}

// Rotate is F.rotate(img, angle) (degrees, counter-clockwise, about the
// centre, same size), with torch's exact paths for multiples of 90°.
func Rotate(dst, src []byte, h, w, ch int, angle float64, bilinear bool, fill []float32) {
	angle = math.Mod(angle, 360)
	if angle < 0 {
		angle += 360
	}
	switch {
	case angle == 0:
		copy(dst, src)
		return
	case angle == 180:
		for i := 0; i < h*w; i++ {
			copy(dst[i*ch:(i+1)*ch], src[(h*w-1-i)*ch:(h*w-i)*ch])
		}
		return
	case (angle == 90 || angle == 270) && h == w:
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				sy, sx := x, w-1-y // torch.rot90(k=1)
				if angle == 270 {
					sy, sx = h-1-x, y
				}
				copy(dst[(y*w+x)*ch:(y*w+x+1)*ch], src[(sy*w+sx)*ch:(sy*w+sx+1)*ch])
			}
		}
		return
	}
	Warp(dst, src, h, w, ch, InvAffine(0, 0, -angle, 0, 0, 1, 0, 0), bilinear, fill)
}
