package audioproc

import "math"

// MelFrames writes the mel bands of frames [0, frames) of x into out,
// band-major: out[m·stride + t] for band m and frame t (stride ≥ frames),
// as torchaudio's MelSpectrogram lays them out, (n_mels, time). Frames go
// through a tile of tileFrames at a time, so that each band's row is
// written a cache line at a time rather than one value per line.
func MelFrames(s *Spectrogram, b *MelBank, x []float32, frames int, out []float64, stride int) {
	nm := len(b.Filters)
	tile := make([]float64, tileFrames*nm)
	for t0 := 0; t0 < frames; t0 += tileFrames {
		n := min(tileFrames, frames-t0)
		for k := 0; k < n; k++ {
			b.Apply(s.Frame(x, t0+k), tile[k*nm:(k+1)*nm])
		}
		for m := 0; m < nm; m++ {
			row := out[m*stride+t0 : m*stride+t0+n]
			for k := range row {
				row[k] = tile[k*nm+m]
			}
		}
	}
}

const tileFrames = 16

// Whisper's constants (whisper.audio): 16 kHz, 25 ms windows every 10 ms,
// 30 s chunks.
const (
	WhisperRate    = 16000
	WhisperNFFT    = 400
	WhisperHop     = 160
	WhisperSamples = 30 * WhisperRate
)

// NewWhisperBank is whisper's mel_filters.npz bank: librosa's
// filters.mel(sr=16000, n_fft=400, n_mels) (Slaney's scale and area
// normalisation, 0 to 8 kHz).
func NewWhisperBank(nMels int) (*MelBank, error) {
	freqs := make([]float64, WhisperNFFT/2+1)
	for i := range freqs {
		freqs[i] = float64(i) * WhisperRate / WhisperNFFT // numpy's rfftfreq
	}
	return NewMelBank(freqs, 0, WhisperRate/2, nMels, true, Slaney)
}

// LogMel turns mel powers into Whisper's features in place, over all of
// v (a sample's whole spectrogram): log10(max(v, 1e-10)), floored at its
// maximum − 8, then (x + 4)/4.
func LogMel(v []float64) {
	mx := math.Inf(-1)
	for i, x := range v {
		x = log10(max(x, 1e-10))
		v[i] = x
		mx = max(mx, x)
	}
	for i, x := range v {
		v[i] = (max(x, mx-8) + 4) / 4
	}
}

// log10 is math.Log10 for the positive, finite, normal x that LogMel
// takes (clamped at 1e-10), within 2 ulp, in a quarter of its time:
// x = m·2^e with m in [√½, √2), and ln m = 2·atanh(s), s = (m−1)/(m+1),
// |s| < 0.172, by its series to s^21 (the next term is below 1e-17 of
// the sum).
func log10(x float64) float64 {
	b := math.Float64bits(x)
	e := int((b>>52)&0x7ff) - 1023
	m := math.Float64frombits(b&(1<<52-1) | 1023<<52) // in [1, 2)
	if m > math.Sqrt2 {
		m *= 0.5
		e++
	}
	s := (m - 1) / (m + 1)
	z := s * s
	p := 1 + z*(1.0/3+z*(1.0/5+z*(1.0/7+z*(1.0/9+z*(1.0/11+z*(1.0/13+z*(1.0/15+z*(1.0/17+z*(1.0/19+z*(1.0/21))))))))))
	return (2*s*p + float64(e)*math.Ln2) * (1 / math.Ln10)
}
