package audioproc

import (
	"fmt"
	"math"
)

// PadMode is how a centred STFT extends the signal by n_fft/2 at each end
// (torch.stft's pad_mode).
type PadMode int

const (
	Reflect   PadMode = iota // x[1], x[2], ... mirrored, the edge sample not repeated
	Constant                 // zeros
	Replicate                // the edge sample repeated
)

// ParsePadMode reads a pad mode's torch name.
func ParsePadMode(s string) (PadMode, error) {
	switch s {
	case "", "reflect":
		return Reflect, nil
	case "constant":
		return Constant, nil
	case "replicate":
		return Replicate, nil
	}
	return 0, fmt.Errorf("pad_mode %q must be reflect, constant or replicate", s)
}

// Spectrogram computes |STFT|^power frame by frame as torch.stft and
// torchaudio's Spectrogram do: a periodic Hann window of win_length,
// centred in n_fft when shorter; with center, the signal padded by
// n_fft/2 at each end (PadMode); one-sided, unnormalised. Not safe for
// concurrent use.
type Spectrogram struct {
	NFFT, Hop int
	Center    bool
	Pad       PadMode
	Power     float64
	window    []float64 // n_fft long, zero outside the window
	rfft      *RFFT
	frame     []float64
	bins      []complex128
	power     []float64
	// Several frames at a time (FrameGroup), where powerv.c serves the
	// plan.
	pv                      *planV
	zr, zi, tr, ti, pw, mel []float64
	tile                    []float64 // MelFrames' bands of tileFrames frames
}

// NewSpectrogram plans spectrograms of the given geometry; power > 0.
func NewSpectrogram(nFFT, winLength, hop int, center bool, pad PadMode, power float64) (*Spectrogram, error) {
	switch {
	case nFFT < 2 || nFFT > 1<<16:
		return nil, fmt.Errorf("n_fft %d out of range [2, 65536]", nFFT)
	case winLength < 1 || winLength > nFFT:
		return nil, fmt.Errorf("win_length %d must be in [1, n_fft %d]", winLength, nFFT)
	case hop < 1:
		return nil, fmt.Errorf("hop_length %d must be positive", hop)
	case !(power > 0) || math.IsInf(power, 0):
		return nil, fmt.Errorf("power %v must be positive", power)
	}
	rf, err := NewRFFT(nFFT)
	if err != nil {
		return nil, err
	}
	s := &Spectrogram{NFFT: nFFT, Hop: hop, Center: center, Pad: pad, Power: power, rfft: rf,
		window: make([]float64, nFFT), frame: make([]float64, nFFT),
		bins: make([]complex128, nFFT/2+1), power: make([]float64, nFFT/2+1)}
	if s.pv = newPlanV(rf); s.pv != nil {
		n := maxLanes * (nFFT/2 + 1)
		s.zr, s.zi, s.tr, s.ti = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		s.pw = make([]float64, n)
	}
	left := (nFFT - winLength) / 2
	for i := 0; i < winLength; i++ {
		s.window[left+i] = HannPeriodic(winLength, i)
	}
	return s, nil
}

// HannPeriodic is sample i of torch.hann_window(n, periodic=True):
// sin²(π·i/n), which is 0.5 − 0.5·cos(2π·i/n).
func HannPeriodic(n, i int) float64 {
	s := math.Sin(math.Pi * float64(i) / float64(n))
	return s * s
}

// NFreqs is the number of bins of a frame: n_fft/2 + 1.
func (s *Spectrogram) NFreqs() int { return s.NFFT/2 + 1 }

// Frames is the number of frames of a signal of n samples: 1 + n/hop
// when centred, else 1 + (n − n_fft)/hop (0 when n < n_fft).
func (s *Spectrogram) Frames(n int) int {
	if s.Center {
		return 1 + n/s.Hop
	}
	if n < s.NFFT {
		return 0
	}
	return 1 + (n-s.NFFT)/s.Hop
}

// sample is the padded signal at index j (j < 0 or j ≥ len(x) in the
// padding). Reflection repeats for signals shorter than the padding
// (numpy's reflect), where torch refuses them.
func (s *Spectrogram) sample(x []float32, j int) float64 {
	n := len(x)
	if j >= 0 && j < n {
		return float64(x[j])
	}
	switch {
	case n == 0 || s.Pad == Constant:
		return 0
	case s.Pad == Replicate:
		return float64(x[min(max(j, 0), n-1)])
	case n == 1:
		return float64(x[0])
	}
	period := 2 * (n - 1)
	j %= period
	if j < 0 {
		j += period
	}
	if j >= n {
		j = period - j
	}
	return float64(x[j])
}

// Frame writes frame t's |X|^power (len NFreqs) of the signal x, and
// returns it; the slice is reused by the next call. For an even n_fft
// the windowed samples go straight into the half-length complex
// transform and the split gives |X|² (RFFT.Power), with no complex
// spectrum between.
func (s *Spectrogram) Frame(x []float32, t int) []float64 {
	start := t * s.Hop
	if s.Center {
		start -= s.NFFT / 2
	}
	inside := start >= 0 && start+s.NFFT <= len(x)
	if z := s.rfft.Half(); z != nil {
		w := s.window[:2*len(z)]
		if inside {
			seg := x[start : start+2*len(z)]
			for k := range z {
				z[k] = complex(float64(seg[2*k])*w[2*k], float64(seg[2*k+1])*w[2*k+1])
			}
		} else {
			for k := range z {
				z[k] = complex(s.sample(x, start+2*k)*w[2*k], s.sample(x, start+2*k+1)*w[2*k+1])
			}
		}
		s.rfft.Power(z, s.power)
	} else {
		f := s.frame
		for i := range f {
			f[i] = s.sample(x, start+i) * s.window[i]
		}
		s.rfft.Forward(f, s.bins)
		for k, c := range s.bins {
			s.power[k] = real(c)*real(c) + imag(c)*imag(c)
		}
	}
	s.scale(s.power)
	return s.power
}

// scale raises |X|² to the power/2.
func (s *Spectrogram) scale(p []float64) {
	switch s.Power {
	case 2:
	case 1:
		for k, v := range p {
			p[k] = math.Sqrt(v)
		}
	default:
		for k, v := range p {
			p[k] = math.Pow(v, s.Power/2)
		}
	}
}

// Group is the frames FrameGroup computes at once: 1 where it cannot
// (built without cgo, FFCV_GO_SIMD=off, an odd n_fft, a radix past 5).
func (s *Spectrogram) Group() int {
	if s.pv == nil || lanes < 2 {
		return 1
	}
	return lanes
}

// FrameGroup is Frame for the g ≤ Group() frames from t on, at once
// through powerv.c: frame t+l's |X|^power at [l·NFreqs, (l+1)·NFreqs) of
// the returned slice, which the next call reuses. With a Group of 1 it
// is Frame.
func (s *Spectrogram) FrameGroup(x []float32, t, g int) []float64 {
	if s.Group() == 1 {
		return s.Frame(x, t)
	}
	h := s.NFFT / 2
	starts := s.pack(x, t, g)
	s.pv.power(x, &starts, s.window, s.zr, s.zi, s.tr, s.ti, s.pw)
	p := s.pw[:g*(h+1)]
	s.scale(p)
	return p
}

// MelGroup is b's bands of FrameGroup's frames, frame t+l's at [l·n_mels,
// (l+1)·n_mels) of the returned slice, which the next call reuses; ok is
// false where powerv.c cannot (a Group of 1, a power other than 2, a
// bank not made by NewMelBank): FrameGroup and MelBank.Apply then.
func (s *Spectrogram) MelGroup(x []float32, t, g int, b *MelBank) (mel []float64, ok bool) {
	if s.Group() == 1 || s.Power != 2 || len(b.flat.lo) != len(b.Filters) || b.NFreqs != s.NFreqs() {
		return nil, false
	}
	if n := maxLanes * len(b.Filters); len(s.mel) < n {
		s.mel = make([]float64, n)
	}
	starts := s.pack(x, t, g)
	s.pv.mel(x, &starts, s.window, s.zr, s.zi, s.tr, s.ti, b, s.mel)
	return s.mel[:g*len(b.Filters)], true
}

// pack lays out the g frames from t for powerv.c: the reflected edges'
// windowed samples in zr and zi, lanes past g zero there, and the starts
// of the frames inside x, which it reads itself (−1 for the others).
func (s *Spectrogram) pack(x []float32, t, g int) (starts [maxLanes]int) {
	L := lanes
	h := s.NFFT / 2
	zr, zi, w := s.zr[:L*h], s.zi[:L*h], s.window[:2*h]
	for l := 0; l < L; l++ {
		start := (t + l) * s.Hop
		if s.Center {
			start -= s.NFFT / 2
		}
		starts[l] = -1
		switch {
		case l >= g:
			for k := l; k < L*h; k += L {
				zr[k], zi[k] = 0, 0
			}
		case start >= 0 && start+2*h <= len(x):
			starts[l] = start
		default:
			for k := 0; k < h; k++ {
				zr[L*k+l] = s.sample(x, start+2*k) * w[2*k]
				zi[L*k+l] = s.sample(x, start+2*k+1) * w[2*k+1]
			}
		}
	}
	return starts
}
