package imgproc

import "math"

// Gaussian blur as torchvision's gaussian_blur: a k-tap kernel
// softmax(-(x/sigma)^2) over x = linspace(-lim, lim), lim = (k-1)/(2·√2),
// reflect padding, float32 arithmetic and rounding to uint8. torchvision
// convolves with the 2-D outer product; separable passes compute the same
// sums in another order (float32 rounding differs by at most one level), and
// the outer taps that cannot matter are left out (see blurTail).

// A Blurrer keeps GaussianBlur's scratch buffers between calls, so the hot
// loop does not allocate; it is not safe for concurrent use.
type Blurrer struct {
	tmp    []float32 // the horizontal pass's output
	pad    []float32 // one row with its reflected margins, as float32
	row    []float32 // the vertical pass's accumulator
	kernel []float32
}

// gaussKernel is torchvision's float32 1-D kernel.
func gaussKernel(dst []float32, sigma float64) {
	k := len(dst)
	lim := float32(float64(k-1) / (2 * math.Sqrt2))
	step := float32(0)
	if k > 1 {
		step = (lim + lim) / float32(k-1)
	}
	x := func(i int) float64 {
		v := -lim + float32(float32(i)*step)
		if i >= k/2 { // torch's linspace fills the upper half from the end
			v = lim - float32(float32(k-1-i)*step)
		}
		v = float32(v / float32(sigma))
		return math.Exp(-float64(v * v))
	}
	var sum float64
	for i := range dst {
		sum += x(i)
	}
	for i := range dst {
		dst[i] = float32(x(i) / sum)
	}
}

// reflect maps i into [0, n) mirroring at the edges without repeating them.
func reflect(i, n int) int {
	for i < 0 || i >= n {
		if i < 0 {
			i = -i
		}
		if i >= n {
			i = 2*n - 2 - i
		}
	}
	return i
}

// blurTail bounds the weight of the kernel taps the blur leaves out: each
// pass then lowers a value by at most 255·blurTail = 1e-4 of a level, so a
// rounded result moves only when it lies that close above a half level
// (about 1e-4 of values per pass when fractions spread evenly, a tenth of
// the 0.1% the tests allow). Radii kept for k=23: 2 at sigma 0.5, 5 at 1,
// 10 at 2, none beyond the centre at 0.1 (torchvision sums 11 each side).
const blurTail = 1e-4 / 255

// blurRadius is the radius that keeps every tap of kern (odd, symmetric)
// but outer pairs weighing together less than blurTail.
func blurRadius(kern []float32) int {
	r := len(kern) / 2
	var dropped float64
	for r > 0 && dropped+2*float64(kern[len(kern)/2-r]) < blurTail {
		dropped += 2 * float64(kern[len(kern)/2-r])
		r--
	}
	return r
}

// GaussianBlur blurs img (h, w, ch) in place with a k-tap kernel (k odd,
// below twice each side) of standard deviation sigma: separable float32
// passes, each adding the symmetric pairs of taps over whole rows (no
// per-value reflection or tap loop), with reflect padding as torchvision's.
func (s *Blurrer) GaussianBlur(img []byte, h, w, ch, k int, sigma float64) {
	s.kernel = growF32(s.kernel, k)
	gaussKernel(s.kernel, sigma)
	r := blurRadius(s.kernel)
	kern := s.kernel[k/2-r : k/2+r+1] // kern[r] is the centre
	if r == 0 {
		return // the centre weighs ≥ 1-blurTail: x·kc² rounds to x
	}
	stride := w * ch
	s.tmp = growF32(s.tmp, len(img))
	s.pad = growF32(s.pad, (w+2*r)*ch)
	s.row = growF32(s.row, stride)
	tmp, pad, acc := s.tmp, s.pad, s.row
	// Horizontal pass: pad[(x+r)*ch+cc] is the value at column x, reflected.
	for y := 0; y < h; y++ {
		row := img[y*stride:][:stride]
		body := pad[r*ch:][:stride]
		for i, v := range row {
			body[i] = float32(v)
		}
		for d := 1; d <= r; d++ {
			copy(pad[(r-d)*ch:][:ch], body[reflect(-d, w)*ch:][:ch])
			copy(pad[(r+w-1+d)*ch:][:ch], body[reflect(w-1+d, w)*ch:][:ch])
		}
		out := tmp[y*stride:][:stride]
		sumTaps(out, kern, func(d int) []float32 { return pad[(r+d)*ch:] })
	}
	// Vertical pass back into img, a whole row at a time.
	for y := 0; y < h; y++ {
		src := func(d int) []float32 { return tmp[reflect(y+d, h)*stride:] }
		sumTaps(acc, kern, src)
		row := img[y*stride:][:stride]
		for i, v := range acc {
			row[i] = blurRound(v)
		}
	}
}

// blurRound is roundU8 for a blurred value, a convex combination of bytes
// that float32 rounding keeps within [0, 255.5): adding 2^23 rounds it to
// the nearest integer, ties to even, which the sum's low bits then hold.
func blurRound(v float32) byte {
	return byte(math.Float32bits(v + 1<<23))
}

// sumTaps sets acc to the kernel kern (odd, symmetric, r ≥ 1) applied to
// the rows src(d), d in [-r, r], a few pairs of taps per pass over acc:
// the centre with the 1-3 innermost pairs, so that the rest go three by
// three.
func sumTaps(acc, kern []float32, src func(d int) []float32) {
	r := len(kern) / 2
	c := src(0)[:len(acc)]
	switch first := r - (r-1)/3*3; first {
	case 1:
		a, b, k := src(-1)[:len(acc)], src(1)[:len(acc)], kern[r-1]
		for i := range acc {
			acc[i] = c[i]*kern[r] + (a[i]+b[i])*k
		}
	case 2:
		a, b, k := src(-1)[:len(acc)], src(1)[:len(acc)], kern[r-1]
		e, f, l := src(-2)[:len(acc)], src(2)[:len(acc)], kern[r-2]
		for i := range acc {
			acc[i] = c[i]*kern[r] + (a[i]+b[i])*k + (e[i]+f[i])*l
		}
	default:
		a, b, k := src(-1)[:len(acc)], src(1)[:len(acc)], kern[r-1]
		e, f, l := src(-2)[:len(acc)], src(2)[:len(acc)], kern[r-2]
		g, h, m := src(-3)[:len(acc)], src(3)[:len(acc)], kern[r-3]
		for i := range acc {
			acc[i] = c[i]*kern[r] + (a[i]+b[i])*k + (e[i]+f[i])*l + (g[i]+h[i])*m
		}
	}
	for d := r - (r-1)/3*3 + 1; d < r; d += 3 {
		addPairs3(acc, src(-d), src(d), kern[r-d], src(-d-1), src(d+1), kern[r-d-1], src(-d-2), src(d+2), kern[r-d-2])
	}
}

// addPairs3 adds three pairs of taps at once.
func addPairs3(acc, a, b []float32, k float32, c, d []float32, l float32, e, f []float32, m float32) {
	a, b, c, d, e, f = a[:len(acc)], b[:len(acc)], c[:len(acc)], d[:len(acc)], e[:len(acc)], f[:len(acc)]
	for i := range acc {
		acc[i] += (a[i]+b[i])*k + (c[i]+d[i])*l + (e[i]+f[i])*m
	}
}
