package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
)

// Gaussian blur as torchvision's gaussian_blur: a kernel_size-tap kernel
// softmax(-(x/sigma)^2) over x = linspace(-lim, lim), lim = (k-1)/(2·√2),
// reflect padding, float32 arithmetic and rounding to uint8. torchvision
// convolves with the 2-D outer product; separable passes compute the same
// sums in another order (float32 rounding differs by at most one level).

func init() { register("gaussian_blur", newGaussianBlur) }

type gaussianBlur struct {
	sameImage
	p      float64
	k      int
	lo, hi float64
	spec   Spec
}

func newGaussianBlur(_ Env, raw json.RawMessage) (Op, error) {
	var a struct {
		P          float64    `json:"p"`
		KernelSize int        `json:"kernel_size"`
		Sigma      [2]float64 `json:"sigma"`
	}
	if err := parse(raw, &a); err != nil {
		return nil, err
	}
	if a.KernelSize < 1 || a.KernelSize%2 == 0 {
		return nil, fmt.Errorf("kernel_size %d must be odd and positive", a.KernelSize)
	}
	if !(a.Sigma[0] > 0 && a.Sigma[0] <= a.Sigma[1]) {
		return nil, fmt.Errorf("sigma %v must be positive (min, max)", a.Sigma)
	}
	return &gaussianBlur{p: a.P, k: a.KernelSize, lo: a.Sigma[0], hi: a.Sigma[1]}, nil
}

func (g *gaussianBlur) Out(in Spec) (Spec, error) {
	g.spec = in
	if err := needImage(in); err != nil {
		return in, err
	}
	if r := g.k / 2; r >= in.Shape[0] || r >= in.Shape[1] {
		return in, fmt.Errorf("kernel_size %d needs images larger than %dx%d for reflect padding", g.k, in.Shape[0], in.Shape[1])
	}
	return in, nil
}

// drawBlur is the blur's draw: whether it applies and its sigma.
func drawBlur(c *Ctx, op int, p, lo, hi float64) (bool, float64) {
	r := c.Rand(op)
	apply := r.Float64() < p
	return apply, lo + float64(r.Float64()*(hi-lo))
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

type blurScratch struct {
	tmp    []float32
	row    []float32
	kernel []float32
}

// tvGaussianBlur blurs img (h, w, ch) in place.
func tvGaussianBlur(c *Ctx, img []byte, h, w, ch, k int, sigma float64) {
	s := c.State("blur", func() any { return new(blurScratch) }).(*blurScratch)
	if cap(s.tmp) < len(img) {
		s.tmp = make([]float32, len(img))
	}
	if cap(s.kernel) < k {
		s.kernel = make([]float32, k)
	}
	if cap(s.row) < w*ch {
		s.row = make([]float32, w*ch)
	}
	tmp, kern := s.tmp[:len(img)], s.kernel[:k]
	gaussKernel(kern, sigma)
	r := k / 2
	stride := w * ch
	// Horizontal pass into tmp; the interior skips the reflection.
	for y := 0; y < h; y++ {
		row, trow := img[y*stride:(y+1)*stride], tmp[y*stride:(y+1)*stride]
		for x := 0; x < w; x++ {
			inner := x >= r && x+r < w
			for cc := 0; cc < ch; cc++ {
				var acc float32
				for t := 0; t < k; t++ {
					sx := x + t - r
					if !inner {
						sx = reflect(sx, w)
					}
					acc += float32(float32(row[sx*ch+cc]) * kern[t])
				}
				trow[x*ch+cc] = acc
			}
		}
	}
	// Vertical pass back into img, a row at a time: each output row sums
	// whole input rows, taps in the same order as per value.
	acc := s.row[:stride]
	for y := 0; y < h; y++ {
		clear(acc)
		for t := 0; t < k; t++ {
			src, kt := tmp[reflect(y+t-r, h)*stride:][:stride], kern[t]
			for i, v := range src {
				acc[i] += float32(v * kt)
			}
		}
		row := img[y*stride : (y+1)*stride]
		for i, v := range acc {
			row[i] = roundU8(v)
		}
	}
}

func (g *gaussianBlur) Run(c *Ctx, op int, in, out []byte) error {
	copyIfNeeded(out, in)
	apply, sigma := drawBlur(c, op, g.p, g.lo, g.hi)
	if !apply {
		return nil
	}
	tvGaussianBlur(c, out, g.spec.Shape[0], g.spec.Shape[1], g.spec.Shape[2], g.k, sigma)
	return nil
}
