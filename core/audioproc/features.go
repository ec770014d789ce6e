package audioproc

import "math"

// MelFrames writes the mel bands of frames [0, frames) of x into out,
// band-major: out[m·stride + t] for band m and frame t (stride ≥ frames),
// as torchaudio's MelSpectrogram lays them out, (n_mels, time). Frames go
// through a tile of tileFrames at a time, so that each band's row is
// written a cache line at a time rather than one value per line.
func MelFrames(s *Spectrogram, b *MelBank, x []float32, frames int, out []float64, stride int) {
	nm, nf := len(b.Filters), s.NFreqs()
	if len(s.tile) < tileFrames*nm {
		s.tile = make([]float64, tileFrames*nm)
	}
	tile := s.tile
	for t0 := 0; t0 < frames; t0 += tileFrames {
		n := min(tileFrames, frames-t0)
		for k := 0; k < n; k += s.Group() {
			g := min(s.Group(), n-k)
			if mel, ok := s.MelGroup(x, t0+k, g, b); ok {
				copy(tile[k*nm:(k+g)*nm], mel)
				continue
			}
			p := s.FrameGroup(x, t0+k, g)
			for l := 0; l < g; l++ {
				b.Apply(p[l*nf:(l+1)*nf], tile[(k+l)*nm:(k+l+1)*nm])
			}
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
	mx := Log10Max(v, math.Inf(-1))
	for i, x := range v {
		v[i] = WhisperScale(x, mx)
	}
}

// Log10Max replaces each x of v with log10(max(x, 1e-10)) and returns
// the largest of them and mx: LogMel's first pass, band by band. The
// logarithm is math.Log10's within 2 ulp (absolute near 1), in a fifth
// of its time: x = m·2^e with m in [1, 2), c the centre of m's 1/256th
// of that range, log10 x = e·log10 2 + log10 c + ln(1 + r)/ln 10, r =
// m/c − 1 (|r| < 2^-9; computed as m·(1/c) − 1 with log10 c taken of the
// rounded 1/c, so exact but for that product's rounding), ln(1 + r) by
// its series to r^5 (the next term is below 1e-17 of it). For c ≥ √2 the
// table holds log10 c − log10 2 and e counts one more, so that x just
// under 1 does not lose its digits to e·log10 2 + log10 c cancelling;
// e·log10 2 is added last, its high part exact. It is written out in the loop, where a call would cost a third of it.
func Log10Max(v []float64, mx float64) float64 {
	const l = 1 / math.Ln10
	for i, x := range v {
		if x < 1e-10 {
			x = 1e-10
		}
		b := math.Float64bits(x)
		t := &logTable[(b>>(52-logBits))%(1<<logBits)]
		e := float64(int64(b>>52)) + t.e // x is positive: no sign bit
		r := math.Float64frombits(b&(1<<52-1)|1023<<52)*t.invc - 1
		x = e*lg2Hi + (e*lg2Lo + t.logc + r*(l+r*(-l/2+r*(l/3+r*(-l/4+r*(l/5))))))
		v[i] = x
		if x > mx {
			mx = x
		}
	}
	return mx
}

// WhisperScale is a log10 value x floored at mx − 8, mx the maximum,
// then (x + 4)/4.
func WhisperScale(x, mx float64) float64 {
	return (max(x, mx-8) + 4) / 4
}

// log10 is Log10Max's logarithm of x ≥ 1e-10.
func log10(x float64) float64 {
	v := [1]float64{x}
	Log10Max(v[:], 0)
	return v[0]
}

const logBits = 8

// log10 2 in two parts, the high one with 20 low zero bits, so that
// e·lg2Hi is exact.
var (
	lg2Hi = math.Float64frombits(math.Float64bits(math.Log10(2)) &^ (1<<20 - 1))
	lg2Lo = math.Log10(2) - lg2Hi
)

var logTable = func() (tab [1 << logBits]struct{ invc, logc, e float64 }) {
	for i := range tab {
		c := 1 + (float64(i)+0.5)/(1<<logBits)
		t := &tab[i]
		t.invc = 1 / c
		t.logc = -math.Log(t.invc) / math.Ln10
		t.e = -1023 // the exponent's bias
		if c >= math.Sqrt2 {
			t.logc -= math.Log10(2)
			t.e++
		}
	}
	return
}()
