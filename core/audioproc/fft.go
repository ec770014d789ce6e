package audioproc

import (
	"fmt"
	"math"
)

// FFT is a plan for complex discrete Fourier transforms of one length:
// a self-sorting (Stockham) mixed-radix transform over the length's
// factors, radix 8, 4, 2, 3 and 5 with their own butterflies and any other
// prime with a generic one (O(n·p) for a prime p, so lengths with a large
// prime factor are slow but exact). Spectrogram lengths (400, 512, 1024)
// factor into 8, 4, 2 and 5: 200 = 8·5·5, three passes. A plan holds its twiddles and scratch: it is
// not safe for concurrent use.
type FFT struct {
	n      int
	stages []stage
	tmp    []complex128
}

type stage struct {
	r, m int          // radix, and the length of the sub-transforms after it
	tw   []complex128 // tw[p*(r-1)+t-1] = W_n^(p·t), n = r·m the stage's length
	root []complex128 // root[k] = W_r^k, for the generic butterfly
}

// NewFFT plans transforms of length n (n ≥ 1).
func NewFFT(n int) (*FFT, error) {
	if n < 1 || n > 1<<26 {
		return nil, fmt.Errorf("FFT length %d out of range [1, 2^26]", n)
	}
	f := &FFT{n: n, tmp: make([]complex128, n)}
	cur := n
	for _, r := range factor(n) {
		m := cur / r
		s := stage{r: r, m: m, tw: make([]complex128, m*(r-1))}
		for p := 0; p < m; p++ {
			for t := 1; t < r; t++ {
				s.tw[p*(r-1)+t-1] = unit(-float64(p*t), float64(cur))
			}
		}
		if r > 5 {
			s.root = make([]complex128, r)
			for k := range s.root {
				s.root[k] = unit(-float64(k), float64(r))
			}
		}
		f.stages = append(f.stages, s)
		cur = m
	}
	return f, nil
}

// unit is exp(2πi·num/den), its angle reduced first so that the values at
// the quarter turns are exact.
func unit(num, den float64) complex128 {
	a := 2 * math.Pi * math.Mod(num, den) / den
	s, c := math.Sincos(a)
	return complex(c, s)
}

// factor splits n into radices: eights first (the fewest passes and
// multiplies), then a four or a two, threes, fives, and the remaining
// primes.
func factor(n int) []int {
	var out []int
	for n%8 == 0 {
		out = append(out, 8)
		n /= 8
	}
	for n%4 == 0 {
		out = append(out, 4)
		n /= 4
	}
	for _, p := range []int{2, 3, 5} {
		for n%p == 0 {
			out = append(out, p)
			n /= p
		}
	}
	for p := 7; n > 1; p += 2 {
		for n%p == 0 {
			out = append(out, p)
			n /= p
		}
		if p*p > n && n > 1 {
			out = append(out, n)
			break
		}
	}
	return out
}

// Len is the transform's length.
func (f *FFT) Len() int { return f.n }

// Forward transforms x in place: X[k] = Σ x[j]·exp(-2πi·jk/n).
func (f *FFT) Forward(x []complex128) {
	x = x[:f.n]
	a, b := x, f.tmp
	s := 1
	for _, st := range f.stages {
		st.run(a, b, s)
		a, b = b, a
		s *= st.r
	}
	if &a[0] != &x[0] {
		copy(x, a)
	}
}

// run is one Stockham step: sub-sequences of length r·m at stride s in x
// go to y, each butterfly's outputs twiddled (not those of p = 0, whose
// twiddles are 1: the whole of the last stage).
func (st *stage) run(x, y []complex128, s int) {
	r, m := st.r, st.m
	ms := m * s
	switch r {
	case 8:
		for p := 0; p < m; p++ {
			tw := st.tw[7*p : 7*p+7]
			for q := 0; q < s; q++ {
				i := q + s*p
				// Radix 2 then radix 4: the even outputs are the 4-point
				// DFT of b_j = a_j + a_{j+4}, the odd ones that of
				// c_j·W8^j, c_j = a_j − a_{j+4}.
				a := x[i : i+7*ms+1]
				a0, a1, a2, a3 := a[0], a[ms], a[2*ms], a[3*ms]
				a4, a5, a6, a7 := a[4*ms], a[5*ms], a[6*ms], a[7*ms]
				b0, b1, b2, b3 := a0+a4, a1+a5, a2+a6, a3+a7
				c0, c1, c2, c3 := a0-a4, a1-a5, a2-a6, a3-a7
				c1 = complex((real(c1)+imag(c1))*sqrtHalf, (imag(c1)-real(c1))*sqrtHalf)  // ·(1−i)/√2
				c2 = complex(imag(c2), -real(c2))                                         // ·(−i)
				c3 = complex((imag(c3)-real(c3))*sqrtHalf, -(real(c3)+imag(c3))*sqrtHalf) // ·(−1−i)/√2
				t0, t1, t2, t3 := b0+b2, b0-b2, b1+b3, b1-b3
				t3 = complex(imag(t3), -real(t3))
				u0, u1, u2, u3 := c0+c2, c0-c2, c1+c3, c1-c3
				u3 = complex(imag(u3), -real(u3))
				y0, y2, y4, y6 := t0+t2, t1+t3, t0-t2, t1-t3
				y1, y3, y5, y7 := u0+u2, u1+u3, u0-u2, u1-u3
				if p > 0 {
					y1, y2, y3, y4 = y1*tw[0], y2*tw[1], y3*tw[2], y4*tw[3]
					y5, y6, y7 = y5*tw[4], y6*tw[5], y7*tw[6]
				}
				o := y[q+s*8*p : q+s*8*p+7*s+1]
				o[0], o[s], o[2*s], o[3*s] = y0, y1, y2, y3
				o[4*s], o[5*s], o[6*s], o[7*s] = y4, y5, y6, y7
			}
		}
	case 2:
		for p := 0; p < m; p++ {
			w := st.tw[p]
			for q := 0; q < s; q++ {
				a, b := x[q+s*p], x[q+s*p+ms]
				d := a - b
				if p > 0 {
					d *= w
				}
				y[q+s*2*p] = a + b
				y[q+s*(2*p+1)] = d
			}
		}
	case 4:
		for p := 0; p < m; p++ {
			tw := st.tw[3*p : 3*p+3]
			for q := 0; q < s; q++ {
				i := q + s*p
				a0, a1, a2, a3 := x[i], x[i+ms], x[i+2*ms], x[i+3*ms]
				t0, t1 := a0+a2, a0-a2
				t2, t3 := a1+a3, a1-a3
				t3 = complex(imag(t3), -real(t3)) // -i·t3
				y0, y1, y2, y3 := t0+t2, t1+t3, t0-t2, t1-t3
				if p > 0 {
					y1, y2, y3 = y1*tw[0], y2*tw[1], y3*tw[2]
				}
				o := y[q+s*4*p:]
				o[0], o[s], o[2*s], o[3*s] = y0, y1, y2, y3
			}
		}
	case 3:
		for p := 0; p < m; p++ {
			tw := st.tw[2*p : 2*p+2]
			for q := 0; q < s; q++ {
				i := q + s*p
				a0, a1, a2 := x[i], x[i+ms], x[i+2*ms]
				sum, dif := a1+a2, a1-a2
				u := a0 - 0.5*sum
				v := complex(-sin3*imag(dif), sin3*real(dif)) // i·sin3·dif
				y0, y1, y2 := a0+sum, u+v, u-v
				if p > 0 {
					y1, y2 = y1*tw[0], y2*tw[1]
				}
				o := y[q+s*3*p:]
				o[0], o[s], o[2*s] = y0, y1, y2
			}
		}
	case 5:
		for p := 0; p < m; p++ {
			tw := st.tw[4*p : 4*p+4]
			for q := 0; q < s; q++ {
				i := q + s*p
				a0, a1, a2, a3, a4 := x[i], x[i+ms], x[i+2*ms], x[i+3*ms], x[i+4*ms]
				b1, b4 := a1+a4, a1-a4
				b2, b3 := a2+a3, a2-a3
				u1 := a0 + complex(cos51*real(b1)+cos52*real(b2), cos51*imag(b1)+cos52*imag(b2))
				u2 := a0 + complex(cos52*real(b1)+cos51*real(b2), cos52*imag(b1)+cos51*imag(b2))
				// i·(sin51·b4 + sin52·b3) and i·(sin52·b4 − sin51·b3)
				v1r, v1i := sin51*real(b4)+sin52*real(b3), sin51*imag(b4)+sin52*imag(b3)
				v2r, v2i := sin52*real(b4)-sin51*real(b3), sin52*imag(b4)-sin51*imag(b3)
				v1, v2 := complex(-v1i, v1r), complex(-v2i, v2r)
				y0, y1, y2, y3, y4 := a0+b1+b2, u1+v1, u2+v2, u2-v2, u1-v1
				if p > 0 {
					y1, y2, y3, y4 = y1*tw[0], y2*tw[1], y3*tw[2], y4*tw[3]
				}
				o := y[q+s*5*p:]
				o[0], o[s], o[2*s], o[3*s], o[4*s] = y0, y1, y2, y3, y4
			}
		}
	default:
		for p := 0; p < m; p++ {
			for q := 0; q < s; q++ {
				i := q + s*p
				o := q + s*r*p
				for t := 0; t < r; t++ {
					var acc complex128
					for k := 0; k < r; k++ {
						acc += x[i+k*ms] * st.root[(t*k)%r]
					}
					if t > 0 {
						acc *= st.tw[p*(r-1)+t-1]
					}
					y[o+s*t] = acc
				}
			}
		}
	}
}

// The butterflies' constants, as literals so that they compile into the
// arithmetic: W_8 = (1 − i)·sqrtHalf, W_3 = −½ + i·sin3, W_5^k = cos5k +
// i·sin5k (cos 2π/5 = (√5 − 1)/4, cos 4π/5 = −(√5 + 1)/4).
const (
	sqrtHalf = 0.7071067811865476
	sin3     = -0.8660254037844386
	cos51    = 0.30901699437494745
	cos52    = -0.8090169943749475
	sin51    = -0.9510565162951535
	sin52    = -0.5877852522924731
)

// RFFT is a plan for the transform of real sequences of one length: for
// an even length, one complex transform of half the length and a split;
// for an odd one, a complex transform of the whole. Not safe for
// concurrent use.
type RFFT struct {
	n    int
	half *FFT
	full *FFT
	buf  []complex128
	w    []complex128 // w[k] = exp(-2πi·k/n), for the split
}

// NewRFFT plans real transforms of length n (n ≥ 1).
func NewRFFT(n int) (*RFFT, error) {
	r := &RFFT{n: n}
	var err error
	if n%2 == 0 {
		r.half, err = NewFFT(n / 2)
		r.buf = make([]complex128, n/2)
		r.w = make([]complex128, n/2+1)
		for k := range r.w {
			r.w[k] = unit(-float64(k), float64(n))
		}
	} else {
		r.full, err = NewFFT(n)
		r.buf = make([]complex128, n)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Len is the length of the real input.
func (r *RFFT) Len() int { return r.n }

// Forward writes X[0..n/2] of the real x (len n) into out (len n/2+1).
func (r *RFFT) Forward(x []float64, out []complex128) {
	n := r.n
	if r.full != nil {
		for i, v := range x[:n] {
			r.buf[i] = complex(v, 0)
		}
		r.full.Forward(r.buf)
		copy(out[:n/2+1], r.buf)
		return
	}
	h := n / 2
	z := r.buf
	for k := 0; k < h; k++ {
		z[k] = complex(x[2*k], x[2*k+1])
	}
	r.half.Forward(z)
	// X[k] = E[k] + W^k·O[k], E and O the transforms of the even and odd
	// samples: E[k] = (Z[k] + conj Z[h-k])/2, O[k] = (Z[k] - conj Z[h-k])/2i.
	z0 := z[0]
	out[0] = complex(real(z0)+imag(z0), 0)
	out[h] = complex(real(z0)-imag(z0), 0)
	w := r.w[:h]
	for k := 1; k < h; k++ {
		a, b := z[k], z[h-k]
		er, ei := (real(a)+real(b))*0.5, (imag(a)-imag(b))*0.5 // E = (a + conj b)/2
		or, oi := (imag(a)+imag(b))*0.5, (real(b)-real(a))*0.5 // O = (a − conj b)/2i
		wr, wi := real(w[k]), imag(w[k])
		out[k] = complex(er+wr*or-wi*oi, ei+wr*oi+wi*or)
	}
}

// Power writes |X[k]|² for k in [0, n/2] (out's length) of the real
// sequence whose even samples are the real parts, and odd samples the
// imaginary parts, of z (len n/2, for an even n), transformed in place:
// Forward's split without the complex output, each pair (k, h−k) from
// one pass, X[h−k] = conj(E[k] − W^k·O[k]). An odd n panics: Forward
// handles it.
func (r *RFFT) Power(z []complex128, out []float64) {
	h := r.n / 2
	z, out = z[:h], out[:h+1]
	r.half.Forward(z)
	z0 := z[0]
	out[0] = (real(z0) + imag(z0)) * (real(z0) + imag(z0))
	out[h] = (real(z0) - imag(z0)) * (real(z0) - imag(z0))
	w := r.w[:h]
	// With E and O doubled (no halving), |X|² is a quarter of |E ± W·O|².
	for k := 1; k <= h/2; k++ {
		a, b := z[k], z[h-k]
		er, ei := real(a)+real(b), imag(a)-imag(b)
		or, oi := imag(a)+imag(b), real(b)-real(a)
		wr, wi := real(w[k]), imag(w[k])
		tr, ti := wr*or-wi*oi, wr*oi+wi*or
		pr, pi := er+tr, ei+ti
		mr, mi := er-tr, ei-ti
		out[k] = (pr*pr + pi*pi) * 0.25
		out[h-k] = (mr*mr + mi*mi) * 0.25
	}
}

// Half is the buffer Power transforms (len n/2), nil for an odd n.
func (r *RFFT) Half() []complex128 {
	if r.half == nil {
		return nil
	}
	return r.buf
}
