package audioproc

import (
	"fmt"
	"math"
)

// Resampler resamples by torchaudio.functional.resample's
// sinc_interp_hann method: the rates reduced by their gcd to orig/new, a
// polyphase bank of new windowed-sinc filters of 2·width + orig taps,
// applied with stride orig to the signal padded by width zeros before and
// width + orig after; ceil(new·n/orig) samples out. torchaudio computes
// the kernel in the waveform's dtype, and in float32 its rounding moves
// the result by up to 1e-5; the kernel here follows its float32 steps
// (each rounded as torch rounds it) so that float32 waveforms come out
// equal, and the sums run in float64. Safe for concurrent use.
type Resampler struct {
	Orig, New int // the reduced rates
	width     int
	taps      int
	// span[j] is the run of row j's taps above 1e-10: the window clamps
	// most of a row to about 1e-15 or less when orig is large, and the
	// sums skip those taps, which move no float32 result.
	span [][2]int
	// packed holds the spans' taps alone, row after row (row j's from
	// at[j]): what Apply reads, a few KB where the kernel can be
	// hundreds, so that it stays in cache.
	packed []float32
	at     []int
}

// MaxReducedRate bounds the gcd-reduced rates: the kernel has about
// new·orig taps.
const MaxReducedRate = 1 << 16

// NewResampler plans resampling from origFreq to newFreq Hz (positive
// integers) with torchaudio's lowpass_filter_width and rolloff.
func NewResampler(origFreq, newFreq, lowpassWidth int, rolloff float64) (*Resampler, error) {
	switch {
	case origFreq < 1 || newFreq < 1:
		return nil, fmt.Errorf("orig_freq %d and new_freq %d must be positive", origFreq, newFreq)
	case lowpassWidth < 1 || lowpassWidth > 1024:
		return nil, fmt.Errorf("lowpass_filter_width %d out of range [1, 1024]", lowpassWidth)
	case !(rolloff > 0 && rolloff <= 1):
		return nil, fmt.Errorf("rolloff %v must be in (0, 1]", rolloff)
	}
	g := gcd(origFreq, newFreq)
	orig, nw := origFreq/g, newFreq/g
	if orig > MaxReducedRate || nw > MaxReducedRate || orig*nw > 1<<24 {
		return nil, fmt.Errorf("orig_freq %d and new_freq %d reduce to %d/%d: a kernel of %d×%d is too large",
			origFreq, newFreq, orig, nw, nw, orig)
	}
	r := &Resampler{Orig: orig, New: nw}
	if orig == nw {
		return r, nil
	}
	base := float64(min(orig, nw)) * rolloff
	lw := float64(lowpassWidth)
	r.width = int(math.Ceil(lw * float64(orig) / base))
	r.taps = 2*r.width + orig
	row := make([]float32, r.taps) // one row of the kernel (New rows of taps) at a time
	// torch, in float32: idx = arange(-width, width+orig)/orig;
	// t = (arange(0, -new, -1)/new + idx)·base, clamped to ±lw;
	// window = cos(t·π/lw/2)²; t *= π; k = sin(t)/t (1 at 0) · (window·scale).
	fo, fn := float32(orig), float32(nw)
	fbase, flw, pi := float32(base), float32(lw), float32(math.Pi)
	scale := float32(base / float64(orig))
	for j := 0; j < nw; j++ {
		shift := float32(-j) / fn
		for i := range row {
			idx := float32(i-r.width) / fo
			t := float32(shift+idx) * fbase
			t = min(max(t, -flw), flw)
			c := float32(math.Cos(float64(float32(float32(t*pi)/flw) / 2)))
			window := c * c
			t = t * pi
			k := float32(1)
			if t != 0 {
				k = float32(math.Sin(float64(t))) / t
			}
			row[i] = k * float32(window*scale)
		}
		lo, hi := 0, len(row)
		for lo < hi && math.Abs(float64(row[lo])) <= negligible {
			lo++
		}
		for hi > lo && math.Abs(float64(row[hi-1])) <= negligible {
			hi--
		}
		r.span = append(r.span, [2]int{lo, hi})
		r.at = append(r.at, len(r.packed))
		r.packed = append(r.packed, row[lo:hi]...)
	}
	return r, nil
}

const negligible = 1e-10

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// OutLen is the number of samples n input samples resample to:
// ceil(new·n/orig).
func (r *Resampler) OutLen(n int) int {
	return (r.New*n + r.Orig - 1) / r.Orig
}

// Identity reports whether the rates are equal (the samples pass
// unchanged, as torchaudio returns the waveform itself).
func (r *Resampler) Identity() bool { return r.Orig == r.New }

// Apply resamples x into out (len at least OutLen(len(x))), writing
// OutLen(len(x)) samples.
func (r *Resampler) Apply(x, out []float32) {
	n := r.OutLen(len(x))
	if r.Identity() {
		copy(out[:n], x)
		return
	}
	blk, ph := 0, 0 // o = blk·new + ph
	for o := 0; o < n; o++ {
		// taps i read padded index blk·orig + i, i.e. x[blk·orig + i − width]
		start := blk*r.Orig - r.width
		sp := r.span[ph]
		lo, hi := max(sp[0], -start), min(sp[1], len(x)-start)
		var acc float64
		if lo < hi {
			k := r.packed[r.at[ph]-sp[0]+lo : r.at[ph]-sp[0]+hi]
			acc = dot(x[start+lo:start+hi], k)
		}
		out[o] = float32(acc)
		if ph++; ph == r.New {
			blk, ph = blk+1, 0
		}
	}
}

// dot is Σ x[i]·k[i] in float64 (each product exact: float32 by float32),
// over four running sums, so that the additions' latency overlaps rather
// than chains; a sum's order moves it by float64 rounding alone.
func dot(x, k []float32) float64 {
	k = k[:len(x)]
	var a0, a1, a2, a3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a0 += float64(x[i]) * float64(k[i])
		a1 += float64(x[i+1]) * float64(k[i+1])
		a2 += float64(x[i+2]) * float64(k[i+2])
		a3 += float64(x[i+3]) * float64(k[i+3])
	}
	for ; i < len(x); i++ {
		a0 += float64(x[i]) * float64(k[i])
	}
	return (a0 + a1) + (a2 + a3)
}
