package audioproc

import (
	"fmt"
	"math"
)

// MelScale is a mel scale's formula: HTK's (2595·log10(1 + f/700)), or
// Slaney's (linear below 1 kHz, logarithmic above), as torchaudio and
// librosa define them.
type MelScale int

const (
	HTK MelScale = iota
	Slaney
)

// Slaney's scale: 200/3 Hz per mel up to 1 kHz, then log(6.4)/27 per mel.
const (
	slaneySp     = 200.0 / 3
	slaneyMinHz  = 1000.0
	slaneyMinMel = slaneyMinHz / slaneySp
)

var slaneyStep = math.Log(6.4) / 27

// HzToMel is frequency f in mels.
func (s MelScale) HzToMel(f float64) float64 {
	if s == HTK {
		return 2595 * math.Log10(1+f/700)
	}
	if f >= slaneyMinHz {
		return slaneyMinMel + math.Log(f/slaneyMinHz)/slaneyStep
	}
	return f / slaneySp
}

// MelToHz is m mels in Hz.
func (s MelScale) MelToHz(m float64) float64 {
	if s == HTK {
		return 700 * (math.Pow(10, m/2595) - 1)
	}
	if m >= slaneyMinMel {
		return slaneyMinHz * math.Exp(slaneyStep*(m-slaneyMinMel))
	}
	return slaneySp * m
}

// Filter is one mel band: weights over the frequency bins Lo, Lo+1, ...
// (the band's nonzero run), so applying a bank costs the bands' widths,
// not n_mels × n_freqs.
type Filter struct {
	Lo int
	W  []float64
}

// MelBank is a bank of triangular mel filters over a spectrum's bins.
type MelBank struct {
	NFreqs  int
	Filters []Filter
	// flat is Filters for powerv.c: each band's first bin and width, and
	// the weights one band after the other; empty for a bank not made by
	// NewMelBank (Apply in Go then).
	flat struct {
		lo, n []int32
		w     []float64
	}
}

// NewMelBank builds the filters of torchaudio's melscale_fbanks and
// librosa's filters.mel (they agree): n_mels triangles with corners
// equally spaced in mels from fMin to fMax, over the bin frequencies
// freqs; with slaneyNorm each is divided by half its width in Hz (area
// normalisation). torchaudio's bins are linspace(0, sample_rate // 2,
// n_freqs), librosa's rfftfreq(n_fft, 1/sr): see BinFreqs.
func NewMelBank(freqs []float64, fMin, fMax float64, nMels int, slaneyNorm bool, scale MelScale) (*MelBank, error) {
	if nMels < 1 || nMels > 1<<14 {
		return nil, fmt.Errorf("n_mels %d out of range [1, 16384]", nMels)
	}
	if !(fMin >= 0 && fMin < fMax) {
		return nil, fmt.Errorf("f_min %v and f_max %v must satisfy 0 <= f_min < f_max", fMin, fMax)
	}
	lo, hi := scale.HzToMel(fMin), scale.HzToMel(fMax)
	pts := make([]float64, nMels+2)
	for i := range pts {
		pts[i] = scale.MelToHz(Linspace(lo, hi, nMels+2, i))
	}
	b := &MelBank{NFreqs: len(freqs), Filters: make([]Filter, nMels)}
	for m := range b.Filters {
		down, up := pts[m+1]-pts[m], pts[m+2]-pts[m+1]
		norm := 1.0
		if slaneyNorm {
			norm = 2 / (pts[m+2] - pts[m])
		}
		var f Filter
		for k, fr := range freqs {
			w := math.Max(0, math.Min((fr-pts[m])/down, (pts[m+2]-fr)/up))
			if w == 0 {
				if f.W != nil {
					break
				}
				continue
			}
			if f.W == nil {
				f.Lo = k
			}
			f.W = append(f.W, w*norm)
		}
		b.Filters[m] = f
		b.flat.lo, b.flat.n = append(b.flat.lo, int32(f.Lo)), append(b.flat.n, int32(len(f.W)))
		b.flat.w = append(b.flat.w, f.W...)
	}
	b.flat.w = append(b.flat.w, 0) // never empty
	return b, nil
}

// Linspace is element i of numpy's and torch's linspace(a, b, n) in exact
// arithmetic's nearest float64: a + i·step.
func Linspace(a, b float64, n, i int) float64 {
	if n == 1 {
		return a
	}
	return a + float64(i)*(b-a)/float64(n-1)
}

// BinFreqs is the frequency of each of nFreqs bins up to maxHz:
// linspace(0, maxHz, nFreqs).
func BinFreqs(nFreqs int, maxHz float64) []float64 {
	out := make([]float64, nFreqs)
	for i := range out {
		out[i] = Linspace(0, maxHz, nFreqs, i)
	}
	return out
}

// Dense is the bank as an (n_mels, n_freqs) matrix, row-major.
func (b *MelBank) Dense() []float64 {
	out := make([]float64, len(b.Filters)*b.NFreqs)
	for m, f := range b.Filters {
		copy(out[m*b.NFreqs+f.Lo:], f.W)
	}
	return out
}

// Apply writes the bank's bands of the spectrum spec (len NFreqs) into
// out (len n_mels).
func (b *MelBank) Apply(spec []float64, out []float64) {
	for m, f := range b.Filters {
		var acc float64
		s := spec[f.Lo : f.Lo+len(f.W)]
		for k, w := range f.W {
			acc += w * s[k]
		}
		out[m] = acc
	}
}
