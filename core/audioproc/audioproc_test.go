package audioproc

import (
	"archive/zip"
	"encoding/binary"
	"io"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
)

// The FFT equals a naive DFT for lengths of every radix path: powers of
// two and four, threes, fives, other primes, and their mixes.
func TestFFTMatchesDFT(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 12, 16, 25, 49, 60, 121, 200, 210, 256, 400, 401, 1000} {
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		want := make([]complex128, n)
		for k := range want {
			for j, v := range x {
				want[k] += v * cmplx.Exp(complex(0, -2*math.Pi*float64(j*k%n)/float64(n)))
			}
		}
		f, err := NewFFT(n)
		if err != nil {
			t.Fatal(err)
		}
		got := append([]complex128(nil), x...)
		f.Forward(got)
		for k := range want {
			if cmplx.Abs(got[k]-want[k]) > 1e-9*math.Sqrt(float64(n)) {
				t.Fatalf("n %d: X[%d] = %v, want %v", n, k, got[k], want[k])
			}
		}
		// The real transform of the real parts is the first half of the
		// complex transform of them.
		rf, err := NewRFFT(n)
		if err != nil {
			t.Fatal(err)
		}
		re := make([]float64, n)
		for i, v := range x {
			re[i] = real(v)
			x[i] = complex(real(v), 0)
		}
		f.Forward(x)
		out := make([]complex128, n/2+1)
		rf.Forward(re, out)
		for k := range out {
			if cmplx.Abs(out[k]-x[k]) > 1e-9*math.Sqrt(float64(n)) {
				t.Fatalf("real n %d: X[%d] = %v, want %v", n, k, out[k], x[k])
			}
		}
		// Power is |X|² of the same sequence, packed in pairs.
		if z := rf.Half(); z != nil {
			for k := range z {
				z[k] = complex(re[2*k], re[2*k+1])
			}
			pw := make([]float64, n/2+1)
			rf.Power(z, pw)
			for k, p := range pw {
				want := real(x[k])*real(x[k]) + imag(x[k])*imag(x[k])
				if math.Abs(p-want) > 1e-9*float64(n) {
					t.Fatalf("power n %d: |X[%d]|² = %v, want %v", n, k, p, want)
				}
			}
		}
	}
	if _, err := NewFFT(0); err == nil {
		t.Fatal("length 0 planned")
	}
}

// Mel banks equal torchaudio 2.7's melscale_fbanks: every nonzero weight
// of a few bands, HTK unnormalised and Slaney's scale with area
// normalisation. torchaudio computes in float32, whose cancellation near
// a triangle's feet moves its small weights by up to 1e-5 of the band's
// peak (0.018721 for 0.018717 at band 79's first bin), which is the
// tolerance.
func TestMelBankMatchesTorchaudio(t *testing.T) {
	for _, tc := range []struct {
		name       string
		nFreqs, sr int
		fMin, fMax float64
		nMels      int
		band, lo   int
		weights    []float64
		scale      MelScale
		normSlaney bool
	}{
		{name: "htk first", nFreqs: 201, sr: 16000, fMax: 8000, nMels: 80, band: 0, lo: 1, weights: []float64{0.21644713}},
		{name: "htk middle", nFreqs: 201, sr: 16000, fMax: 8000, nMels: 80, band: 30, lo: 28, weights: []float64{0.70970213, 0.59208572}},
		{name: "htk last", nFreqs: 201, sr: 16000, fMax: 8000, nMels: 80, band: 79, lo: 187, weights: []float64{
			0.018721353, 0.17355762, 0.32839391, 0.48323017, 0.63806641, 0.79290271, 0.94773901, 0.9005658, 0.75047088,
			0.60037595, 0.45028105, 0.30018616, 0.15009125}},
		{name: "slaney first", nFreqs: 257, sr: 16000, fMin: 20, fMax: 7600, nMels: 40, band: 0, lo: 1, scale: Slaney, normSlaney: true,
			weights: []float64{0.0021780436, 0.0082281651, 0.013550036, 0.0074999142, 0.0014497929}},
		{name: "slaney middle", nFreqs: 257, sr: 16000, fMin: 20, fMax: 7600, nMels: 40, band: 20, lo: 52, scale: Slaney, normSlaney: true,
			weights: []float64{0.0014124485, 0.0033918263, 0.0053712041, 0.0073505822, 0.0063983495, 0.0045603705, 0.0027223914, 0.0008844125}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewMelBank(BinFreqs(tc.nFreqs, float64(tc.sr/2)), tc.fMin, tc.fMax, tc.nMels, tc.normSlaney, tc.scale)
			if err != nil {
				t.Fatal(err)
			}
			f := b.Filters[tc.band]
			if f.Lo != tc.lo || len(f.W) != len(tc.weights) {
				t.Fatalf("band %d: bins %d..%d, want %d..%d", tc.band, f.Lo, f.Lo+len(f.W), tc.lo, tc.lo+len(tc.weights))
			}
			peak := 0.0
			for _, w := range tc.weights {
				peak = max(peak, w)
			}
			for k, w := range tc.weights {
				if math.Abs(f.W[k]-w) > 1e-5*peak {
					t.Fatalf("band %d bin %d: %v, want %v", tc.band, f.Lo+k, f.W[k], w)
				}
			}
		})
	}
	for _, bad := range [][2]float64{{0, 0}, {100, 50}, {-1, 10}} {
		if _, err := NewMelBank(BinFreqs(201, 8000), bad[0], bad[1], 80, false, HTK); err == nil {
			t.Fatalf("f_min %v, f_max %v accepted", bad[0], bad[1])
		}
	}
}

// Whisper's bank computed here equals its asset, mel_filters.npz (saved
// from librosa as float32): every weight of both banks within 1e-7 of
// its value.
func TestWhisperBankMatchesAsset(t *testing.T) {
	z, err := zip.OpenReader("testdata/whisper_mel_filters.npz")
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	shapeRe := regexp.MustCompile(`'shape': \((\d+), (\d+)\)`)
	for _, zf := range z.File {
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		hlen := int(binary.LittleEndian.Uint16(data[8:]))
		m := shapeRe.FindSubmatch(data[10 : 10+hlen])
		rows, _ := strconv.Atoi(string(m[1]))
		cols, _ := strconv.Atoi(string(m[2]))
		vals := data[10+hlen:]
		b, err := NewWhisperBank(rows)
		if err != nil {
			t.Fatal(err)
		}
		dense := b.Dense()
		if cols != b.NFreqs || len(vals) != 4*rows*cols {
			t.Fatalf("%s: %d×%d in the asset, %d bins here", zf.Name, rows, cols, b.NFreqs)
		}
		for i := range dense {
			want := float64(math.Float32frombits(binary.LittleEndian.Uint32(vals[4*i:])))
			if math.Abs(dense[i]-want) > 1e-7 {
				t.Fatalf("%s: band %d bin %d = %v, asset %v", zf.Name, i/cols, i%cols, dense[i], want)
			}
		}
	}
	if len(z.File) != 2 {
		t.Fatalf("%d banks in the asset", len(z.File))
	}
}

// testSignal is sin(0.1·i) + 0.5·cos(0.37·i) in float32, as torch makes it.
func testSignal(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		fi := float32(i)
		x[i] = float32(math.Sin(float64(float32(0.1*fi)))) + float32(0.5*float32(math.Cos(float64(float32(0.37*fi)))))
	}
	return x
}

// Resampling equals torchaudio 2.7's resample (default arguments) on a
// 64-sample signal: length and samples at the start, middle and end.
func TestResampleMatchesTorchaudio(t *testing.T) {
	x := testSignal(64)
	if x[1] != 0.5659970641136169 {
		t.Fatalf("test signal x[1] = %v", x[1])
	}
	for _, tc := range []struct {
		orig, new, n int
		at           [4]float64 // samples 0, 1, n/2, n-1
	}{
		{3, 2, 43, [4]float64{0.42467162, 0.598356724, 0.297743857, -0.116720565}},
		{2, 3, 96, [4]float64{0.497757643, 0.592104971, 0.315390319, -0.0499750972}},
		{22050, 16000, 47, [4]float64{0.437356055, 0.594550252, 0.306040347, -0.047819227}},
		{16000, 8000, 32, [4]float64{0.390441597, 0.5994066, 0.315393269, -0.355499506}},
	} {
		r, err := NewResampler(tc.orig, tc.new, 6, 0.99)
		if err != nil {
			t.Fatal(err)
		}
		if r.OutLen(len(x)) != tc.n {
			t.Fatalf("%d→%d: %d samples, want %d", tc.orig, tc.new, r.OutLen(len(x)), tc.n)
		}
		out := make([]float32, tc.n)
		r.Apply(x, out)
		for i, k := range []int{0, 1, tc.n / 2, tc.n - 1} {
			if math.Abs(float64(out[k])-tc.at[i]) > 1e-6 {
				t.Fatalf("%d→%d: y[%d] = %v, want %v", tc.orig, tc.new, k, out[k], tc.at[i])
			}
		}
	}
	for _, bad := range [][2]int{{0, 16000}, {16000, -1}, {1 << 20, 1<<20 - 1}} {
		if _, err := NewResampler(bad[0], bad[1], 6, 0.99); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}

// A centred spectrogram frame equals the DFT of the reflect-padded,
// Hann-windowed samples, and the frame count is torch.stft's: an even
// n_fft (the half-length transform and its split) and an odd one (a
// whole-length transform), frames at both edges and inside.
func TestSpectrogramFrame(t *testing.T) {
	x := testSignal(50)
	for _, nFFT := range []int{16, 15} {
		s, err := NewSpectrogram(nFFT, 12, 4, true, Reflect, 2)
		if err != nil {
			t.Fatal(err)
		}
		if s.Frames(50) != 13 {
			t.Fatalf("%d frames", s.Frames(50))
		}
		left := (nFFT - 12) / 2
		for _, fr := range []int{0, 5, 12} {
			got := s.Frame(x, fr)
			if len(got) != nFFT/2+1 {
				t.Fatalf("n_fft %d: %d bins", nFFT, len(got))
			}
			for k := 0; k <= nFFT/2; k++ {
				var acc complex128
				for i := 0; i < nFFT; i++ {
					j := fr*4 - nFFT/2 + i
					if j < 0 {
						j = -j
					}
					if j >= 50 {
						j = 98 - j
					}
					w := 0.0
					if i >= left && i < left+12 {
						w = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i-left)/12)
					}
					acc += complex(float64(x[j])*w, 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(i*k)/float64(nFFT)))
				}
				want := real(acc)*real(acc) + imag(acc)*imag(acc)
				if math.Abs(got[k]-want) > 1e-9 {
					t.Fatalf("n_fft %d frame %d bin %d: %v, want %v", nFFT, fr, k, got[k], want)
				}
			}
		}
	}
}

// Noise at an SNR equals torchaudio 2.7's add_noise on the test signal
// with noise 0.2·cos(1.3·i): the whole signal at 5 dB, and its first 40
// samples at 10 dB (the energies of those alone; the rest unchanged).
func TestAddNoiseMatchesTorchaudio(t *testing.T) {
	for _, tc := range []struct {
		valid int
		snr   float64
		at    map[int]float64
	}{
		{64, 5, map[int]float64{0: 1.11166286, 1: 0.729616165, 32: -0.128231883, 63: 0.489278287}},
		{40, 10, map[int]float64{0: 0.810580373, 1: 0.649076939, 32: 0.0901498944}},
	} {
		x := testSignal(64)
		orig := append([]float32(nil), x...)
		noise := make([]float32, 64)
		for i := range noise {
			noise[i] = float32(math.Cos(float64(float32(1.3*float32(i))))) * 0.2
		}
		AddNoise(x, noise, tc.valid, tc.snr)
		for i, want := range tc.at {
			if math.Abs(float64(x[i])-want) > 1e-6 {
				t.Fatalf("valid %d: y[%d] = %v, want %v", tc.valid, i, x[i], want)
			}
		}
		for i := tc.valid; i < 64; i++ {
			if x[i] != orig[i] {
				t.Fatalf("valid %d: sample %d changed", tc.valid, i)
			}
		}
	}
}

// The log-mel's log10 is math.Log10's within 4e-16 relative (absolute
// near 1) over the range the features reach, 1e-10 up.
func TestLog10(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		x := math.Pow(10, -10+30*r.Float64())
		if edges := []float64{1e-10, 1, math.Sqrt2, 1 - 1e-12, 1 + 1e-12, 0.999, 1.001, 2, 0.5, 1.99999, 1e10}; i < len(edges) {
			x = edges[i]
		}
		got, want := log10(x), math.Log10(x)
		if math.Abs(got-want) > 4e-16*max(1, math.Abs(want)) {
			t.Fatalf("log10(%v) = %v, want %v", x, got, want)
		}
	}
}

// Frames at once (powerv.c, where cgo builds it) equal Frame's one at a
// time to float64 rounding, and their mel bands (for power 2) Frame's
// through MelBank.Apply: every radix it serves, groups short of its
// lanes, the reflected edges, power 1 and 2.
func TestFrameGroupEqualsFrame(t *testing.T) {
	// Every width this build and CPU have: four lanes (AVX2), two, and
	// one (FFCV_GO_SIMD=off: the Go transform).
	widths := []int{lanes}
	if lanes == 4 {
		widths = append(widths, 2)
	}
	if lanes > 1 {
		widths = append(widths, 1)
	}
	defer func(l int) { lanes = l }(lanes)
	for _, width := range widths {
		lanes = width
		t.Logf("%d lanes", lanes)
		frameGroups(t)
	}
}

func frameGroups(t *testing.T) {
	x := testSignal(3000)
	for _, tc := range []struct {
		nFFT, hop int
		power     float64
		plan      bool
	}{
		{400, 160, 2, true}, // 8·5·5
		{512, 128, 2, true}, // 8·8·4
		{256, 100, 1, true}, // 8·8·2
		{48, 10, 2, true},   // 8·3
		{98, 20, 2, false},  // 7·7: Frame alone
	} {
		s, err := NewSpectrogram(tc.nFFT, tc.nFFT, tc.hop, true, Reflect, tc.power)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: lanes, false: 1}[tc.plan]; s.Group() != want {
			t.Fatalf("n_fft %d, %d lanes: groups of %d, want %d", tc.nFFT, lanes, s.Group(), want)
		}
		frames, nf := s.Frames(len(x)), s.NFreqs()
		bank, err := NewMelBank(BinFreqs(nf, 8000), 0, 8000, 20, true, Slaney)
		if err != nil {
			t.Fatal(err)
		}
		for t0 := 0; t0 < frames; t0++ {
			g := min(s.Group(), frames-t0, 1+t0%s.Group())
			got := append([]float64(nil), s.FrameGroup(x, t0, g)...)
			mel, melOK := s.MelGroup(x, t0, g, bank)
			if melOK != (tc.plan && lanes > 1 && tc.power == 2) {
				t.Fatalf("n_fft %d: MelGroup served: %v", tc.nFFT, melOK)
			}
			mel = append([]float64(nil), mel...)
			for l := 0; l < g; l++ {
				want := s.Frame(x, t0+l)
				for k, w := range want {
					if d := math.Abs(got[l*nf+k] - w); d > 1e-12*(1+w) {
						t.Fatalf("n_fft %d, %d lanes, frame %d bin %d: %v, want %v", tc.nFFT, lanes, t0+l, k, got[l*nf+k], w)
					}
				}
				wantMel := make([]float64, len(bank.Filters))
				bank.Apply(want, wantMel)
				for m, w := range wantMel {
					if melOK && math.Abs(mel[l*len(wantMel)+m]-w) > 1e-12*(1+w) {
						t.Fatalf("n_fft %d, %d lanes, frame %d band %d: %v, want %v", tc.nFFT, lanes, t0+l, m, mel[l*len(wantMel)+m], w)
					}
				}
			}
		}
	}
}
