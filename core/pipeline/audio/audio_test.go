package audio

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/audioproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
	"github.com/ffcv-go/ffcv-go/core/pipeline/waveform"
)

func bytesOf(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func floatsOf(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

// chirp is a rising tone with a second channel at half its amplitude.
func chirp(rows, n int) []float32 {
	x := make([]float32, rows*n)
	for r := 0; r < rows; r++ {
		for i := 0; i < n; i++ {
			t := float64(i) / 16000
			x[r*n+i] = float32(math.Sin(2*math.Pi*(200+3000*t)*t) / float64(r+1))
		}
	}
	return x
}

// layout is x, rows of the last axis of in's shape, in the rows layout
// with valid as their length.
func layout(in pipeline.Spec, x []float32, valid int) (pipeline.Spec, []byte) {
	lead, n := in.Shape[:len(in.Shape)-1], in.Shape[len(in.Shape)-1]
	if len(lead) == 0 {
		lead = []int{1}
	}
	spec := waveform.SpecOf(lead, n)
	b := make([]byte, spec.Bytes())
	for r := 0; r < len(x)/n; r++ {
		copy(b[r*(8+4*n)+8:], bytesOf(x[r*n:(r+1)*n]))
	}
	waveform.SetLength(b, len(x)/n, n, valid)
	return spec, b
}

// run builds op, and runs it on x (of shape in) for the sample at
// position pos: in the rows layout with valid as its length when valid ≥
// 0, else as a plain float32 array. It returns the output's rows, one
// after the other, their shape (lead, then samples) and their length,
// which every row must hold.
func run(t *testing.T, name string, args map[string]any, in pipeline.Spec, x []float32, pos uint64, valid int) ([]float32, []int, int) {
	t.Helper()
	op := optest.NewOp(t, name, args)
	xb := bytesOf(x)
	if valid >= 0 {
		in, xb = layout(in, x, valid)
	}
	out, err := op.Out(in)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	lead, m, ok := waveform.Rows(out)
	if !ok {
		t.Fatalf("%s: output %v %s is not the rows layout", name, out.Shape, out.DType)
	}
	c := pipeline.NewCtx()
	defer c.Close()
	c.Pos, c.Sample, c.Seed = pos, pos, 7
	y := make([]byte, out.Bytes())
	for i := range y {
		y[i] = 0xAB // what is not written shows
	}
	if err := op.Run(c, 0, xb, y); err != nil {
		t.Fatal(err)
	}
	rows := len(y) / (8 + 4*m)
	got := make([]float32, 0, rows*m)
	n := waveform.Length(y)
	for r := 0; r < rows; r++ {
		row := y[r*(8+4*m):]
		if waveform.Length(row) != n || n > m {
			t.Fatalf("%s: row %d holds length %d, row 0 %d (of %d)", name, r, waveform.Length(row), n, m)
		}
		got = append(got, floatsOf(row[8:8+4*m])...)
		for i, v := range got[len(got)-m+n:] {
			if v != 0 {
				t.Fatalf("%s: row %d [%d] = %v past the valid %d", name, r, n+i, v, n)
			}
		}
	}
	return got, append(slices.Clone(lead), m), n
}

func wav(shape ...int) pipeline.Spec { return pipeline.Spec{Shape: shape, DType: "<f4"} }

// rowsOf is the rows layout spec of shape (its last axis the samples).
func rowsOf(shape ...int) pipeline.Spec {
	return waveform.SpecOf(shape[:len(shape)-1], shape[len(shape)-1])
}

// Each operation's output shape, and the inputs and arguments it refuses.
func TestOutAndArguments(t *testing.T) {
	for _, tc := range []struct {
		op   string
		args map[string]any
		in   pipeline.Spec
		want string // the output's rows shape (lead, then samples), or a part of the error
	}{
		// the rows layout of the decoders and of every operation here
		{"audio_mono", nil, rowsOf(2, 100), "[1 100]"},
		{"audio_mono", nil, rowsOf(1, 100), "[1 100]"},
		{"audio_gain", nil, rowsOf(2, 100), "[2 100]"},
		{"audio_resample", map[string]any{"orig_freq": 22050, "new_freq": 16000}, rowsOf(2, 1000), "[2 726]"},
		{"audio_speed", map[string]any{"orig_freq": 16000, "factors": []float64{0.9, 1.1}}, rowsOf(1, 1000), "[1 1112]"},
		{"mel_spectrogram", nil, rowsOf(1, 16000), "[128 81]"},
		{"mel_spectrogram", map[string]any{"n_mels": 40}, rowsOf(2, 16000), "[2 40 81]"},
		{"whisper_log_mel", nil, rowsOf(1, 100), "[80 3000]"},
		{"time_masking", map[string]any{"mask_param": 5}, rowsOf(40, 81), "[40 81]"},
		{"frequency_masking", map[string]any{"mask_param": 5}, rowsOf(2, 40, 81), "[2 40 81]"},
		// plain float32 arrays (an NDArrayField's), all valid
		{"audio_mono", nil, wav(2, 100), "[1 100]"},
		{"audio_mono", nil, wav(100), "[1 100]"},
		{"audio_resample", map[string]any{"orig_freq": 22050, "new_freq": 16000}, wav(2, 1000), "[2 726]"},
		{"audio_resample", map[string]any{"orig_freq": 8000, "new_freq": 16000}, wav(5), "[1 10]"},
		{"audio_speed", map[string]any{"orig_freq": 16000, "factors": []float64{0.9, 1.1}}, wav(1000), "[1 1112]"},
		{"mel_spectrogram", nil, wav(16000), "[128 81]"},
		{"mel_spectrogram", map[string]any{"n_fft": 512, "hop_length": 160, "n_mels": 40, "center": false}, wav(2, 16000), "[2 40 97]"},
		{"whisper_log_mel", nil, wav(100), "[80 3000]"},
		{"whisper_log_mel", map[string]any{"n_mels": 128, "pad_or_trim": false}, wav(16000), "[128 100]"},
		{"time_masking", map[string]any{"mask_param": 5}, wav(2, 40, 81), "[2 40 81]"},
		{"frequency_masking", map[string]any{"mask_param": 5}, wav(40, 81), "[40 81]"},
		// refused inputs
		{"audio_mono", nil, pipeline.Spec{Shape: []int{2, 100}, DType: "<i2"}, "needs waveforms"},
		{"audio_mono", nil, pipeline.Spec{Shape: []int{2, 101}, DType: "|u1"}, "needs waveforms"},
		{"audio_gain", nil, rowsOf(2, 3, 100), "needs waveforms"},
		{"mel_spectrogram", nil, wav(2, 2, 100), "needs waveforms"},
		{"mel_spectrogram", map[string]any{"center": false}, wav(100), "make no frame"},
		{"whisper_log_mel", map[string]any{"pad_or_trim": false}, wav(100), "make no frame"},
		{"time_masking", map[string]any{"mask_param": 5}, wav(100), "needs spectrograms"},
		{"time_masking", map[string]any{"mask_param": 5}, rowsOf(2, 2, 40, 81), "needs spectrograms"},
		// refused arguments
		{"audio_resample", map[string]any{"orig_freq": 0, "new_freq": 16000}, wav(10), "orig_freq 0 and new_freq 16000 must be positive"},
		{"audio_resample", map[string]any{"orig_freq": 16000, "new_freq": 8000, "rolloff": 1.5}, wav(10), "rolloff 1.5"},
		{"audio_resample", map[string]any{"orig_freq": 16000, "new_freq": 8000, "lowpass": 6}, wav(10), "unknown field"},
		{"audio_gain", map[string]any{"min_db": 3, "max_db": -3}, wav(10), "min_db 3 and max_db -3"},
		{"audio_speed", map[string]any{"orig_freq": 16000, "factors": []float64{}}, wav(10), "factors []"},
		{"audio_speed", map[string]any{"orig_freq": 16000, "factors": []float64{-1}}, wav(10), "must be positive"},
		{"mel_spectrogram", map[string]any{"n_fft": 400, "win_length": 401}, wav(10), "win_length 401"},
		{"mel_spectrogram", map[string]any{"hop_length": 0}, wav(10), "hop_length 0"},
		{"mel_spectrogram", map[string]any{"power": 0}, wav(10), "power 0"},
		{"mel_spectrogram", map[string]any{"norm": "l1"}, wav(10), `norm "l1"`},
		{"mel_spectrogram", map[string]any{"mel_scale": "bark"}, wav(10), `mel_scale "bark"`},
		{"mel_spectrogram", map[string]any{"pad_mode": "circular"}, wav(10), `pad_mode "circular"`},
		{"mel_spectrogram", map[string]any{"f_min": 9000}, wav(10), "f_min 9000 and f_max 8000"},
		{"whisper_log_mel", map[string]any{"n_mels": 40}, wav(10), "n_mels 40 must be 80 or 128"},
		{"time_masking", map[string]any{"mask_param": -1}, wav(4, 4), "time_mask_param -1"},
		{"frequency_masking", map[string]any{"mask_param": 2, "p": 2}, wav(4, 4), "p 2 must be in [0, 1]"},
	} {
		t.Run(fmt.Sprintf("%s%v%v", tc.op, tc.args, tc.in.Shape), func(t *testing.T) {
			op, err := pipeline.New(pipeline.Env{}, optest.Spec(t, tc.op, tc.args))
			var out pipeline.Spec
			if err == nil {
				out, err = op.Out(tc.in)
			}
			var got string
			if err != nil {
				got = err.Error()
			} else if lead, n, ok := waveform.Rows(out); ok {
				got = fmt.Sprint(append(slices.Clone(lead), n))
			} else {
				got = fmt.Sprintf("%v %s, not the rows layout", out.Shape, out.DType)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// A sample's valid length, read from its rows: each operation computes
// on the valid part as if it were the whole sample, writes zeros after
// its own, and heads its output rows with its own length. The input's
// padding is not zero here, so reading it would show.
func TestValidLength(t *testing.T) {
	const n, valid = 4000, 2500
	x := chirp(2, n)
	for r := 0; r < 2; r++ {
		for i := valid; i < n; i++ {
			x[r*n+i] = 0.75 // padding that must not be read
		}
	}
	cut := make([]float32, 0, 2*valid) // the valid parts alone
	for r := 0; r < 2; r++ {
		cut = append(cut, x[r*n:r*n+valid]...)
	}
	for _, tc := range []struct {
		op   string
		args map[string]any
	}{
		{"audio_resample", map[string]any{"orig_freq": 22050, "new_freq": 16000}},
		{"audio_resample", map[string]any{"orig_freq": 8000, "new_freq": 16000}},
		{"mel_spectrogram", map[string]any{"n_fft": 256, "hop_length": 100, "n_mels": 20}},
		{"mel_spectrogram", map[string]any{"n_fft": 256, "hop_length": 100, "n_mels": 20, "center": false}},
		{"whisper_log_mel", map[string]any{"pad_or_trim": false}},
		{"whisper_log_mel", nil},
		{"audio_mono", nil},
		{"audio_gain", map[string]any{"min_db": -3, "max_db": 3}},
		{"audio_speed", map[string]any{"orig_freq": 16000, "factors": []float64{0.9}}},
	} {
		t.Run(fmt.Sprint(tc.op, tc.args), func(t *testing.T) {
			if tc.op == "whisper_log_mel" && tc.args == nil && optest.RaceEnabled {
				t.Skip("12,000 frames: seconds under the race detector")
			}
			got, out, gotValid := run(t, tc.op, tc.args, wav(2, n), x, 3, valid)
			want, wantOut, wantValid := run(t, tc.op, tc.args, wav(2, valid), cut, 3, -1)
			m, wm := out[len(out)-1], wantOut[len(wantOut)-1]
			rows := len(got) / m
			if tc.op == "whisper_log_mel" && tc.args == nil {
				wantValid = m // padded to 30 s: every frame is the sample's
			}
			if gotValid != wantValid {
				t.Fatalf("valid length %d, want %d", gotValid, wantValid)
			}
			for r := 0; r < rows; r++ {
				for i := 0; i < m; i++ {
					g := got[r*m+i]
					w := float32(0)
					if i < gotValid {
						w = want[r*wm+i]
					}
					if g != w {
						t.Fatalf("row %d [%d] = %v, want %v", r, i, g, w)
					}
				}
			}
		})
	}
	// A length past the rows is refused, not read past.
	for _, tc := range []struct {
		op   string
		args map[string]any
	}{
		{"audio_gain", nil},
		{"audio_mono", nil},
		{"audio_resample", map[string]any{"orig_freq": 2, "new_freq": 3}},
		{"mel_spectrogram", map[string]any{"n_fft": 16, "n_mels": 4}},
		{"time_masking", map[string]any{"mask_param": 2}},
	} {
		op := optest.NewOp(t, tc.op, tc.args)
		in, b := layout(wav(2, 64), chirp(2, 64), 65)
		spec, err := op.Out(in)
		if err != nil {
			t.Fatal(err)
		}
		c := pipeline.NewCtx()
		err = op.Run(c, 0, b, make([]byte, spec.Bytes()))
		c.Close()
		if err == nil || !strings.Contains(err.Error(), "a valid length of 65 in rows of 64 samples") {
			t.Fatalf("%s: a length past the rows: %v", tc.op, err)
		}
	}
}

// Masks are drawn per sample from the op's key alone, lie within the
// axis (the valid frames, for time) and never wider than mask_param;
// with p < 1 no wider than p of the axis.
func TestMaskDraws(t *testing.T) {
	const F, T = 40, 100
	in := wav(F, T)
	for _, tc := range []struct {
		op    string
		args  map[string]any
		valid int
		limit int // widest mask
	}{
		{"time_masking", map[string]any{"mask_param": 30, "n": 3}, T, 30},
		{"time_masking", map[string]any{"mask_param": 30, "n": 2}, 50, 30},
		{"time_masking", map[string]any{"mask_param": 80, "p": 0.1}, T, 10},
		{"frequency_masking", map[string]any{"mask_param": 27, "n": 2, "mask_value": -1.5}, T, 27},
		{"time_masking", map[string]any{"mask_param": 80, "n": 2}, 20, 80}, // wider than the valid frames
		{"time_masking", map[string]any{"mask_param": 30}, 0, 30},          // no valid frame
	} {
		op := optest.NewOp(t, tc.op, tc.args).(*mask)
		if _, err := op.Out(in); err != nil {
			t.Fatal(err)
		}
		x := make([]float32, F*T) // ones, zeros past the valid frames
		for i := range x {
			if i%T < tc.valid {
				x[i] = 1
			}
		}
		seen := map[string]bool{}
		for pos := uint64(0); pos < 60; pos++ {
			y, _, _ := run(t, tc.op, tc.args, in, x, pos, tc.valid)
			again, _, _ := run(t, tc.op, tc.args, in, x, pos, tc.valid)
			if !slices.Equal(y, again) {
				t.Fatalf("%s: position %d drew twice differently", tc.op, pos)
			}
			c := pipeline.NewCtx()
			c.Pos, c.Sample, c.Seed = pos, pos, 7
			size := F
			if op.time {
				size = tc.valid
			}
			ms := op.Masks(c, 0, size)
			seen[fmt.Sprint(ms)] = true
			for _, m := range ms {
				if m[0] < 0 || m[1] > size || m[1]-m[0] > tc.limit || m[1] < m[0] {
					t.Fatalf("%s: mask %v out of [0, %d) or wider than %d", tc.op, m, size, tc.limit)
				}
			}
			for f := 0; f < F; f++ {
				for tt := 0; tt < T; tt++ {
					in := false
					for _, m := range ms {
						k := f
						if op.time {
							k = tt
						}
						in = in || (k >= m[0] && k < m[1] && tt < tc.valid)
					}
					want := float32(1)
					if tt >= tc.valid {
						want = 0
					} else if in {
						want = op.value
					}
					if y[f*T+tt] != want {
						t.Fatalf("%s: [%d, %d] = %v, want %v (masks %v)", tc.op, f, tt, y[f*T+tt], want, ms)
					}
				}
			}
		}
		if len(seen) < 50 && tc.valid == T {
			t.Fatalf("%s: %d different draws in 60 samples", tc.op, len(seen))
		}
	}
}

// Gain multiplies by 10^(g/20) for a g in [min_db, max_db]; speed
// perturbation draws every factor, and each draw is that factor's
// resampling (from int(factor·orig) Hz) followed by zeros.
func TestGainAndSpeed(t *testing.T) {
	x := chirp(1, 3000)
	lo, hi := math.Inf(1), math.Inf(-1)
	for pos := uint64(0); pos < 100; pos++ {
		y, _, _ := run(t, "audio_gain", map[string]any{"min_db": -6, "max_db": 3}, wav(3000), x, pos, -1)
		g := 20 * math.Log10(float64(y[100]/x[100]))
		if g < -6-1e-4 || g > 3+1e-4 {
			t.Fatalf("gain %v dB out of [-6, 3]", g)
		}
		for i := range x {
			if y[i] != x[i]*float32(math.Pow(10, g/20)) && math.Abs(float64(y[i]-x[i]*float32(math.Pow(10, g/20)))) > 1e-6 {
				t.Fatalf("sample %d: %v, not %v scaled by %v dB", i, y[i], x[i], g)
			}
		}
		lo, hi = min(lo, g), max(hi, g)
	}
	if lo > -5 || hi < 2 {
		t.Fatalf("gains drawn only in [%v, %v]", lo, hi)
	}
	factors := []float64{0.9, 1.0, 1.1}
	drawn := map[int]bool{}
	for pos := uint64(0); pos < 30; pos++ {
		y, out, valid := run(t, "audio_speed", map[string]any{"orig_freq": 16000, "factors": factors}, wav(3000), x, pos, -1)
		if out[1] != 3334 {
			t.Fatalf("output of %d samples, want the slowest factor's 3334", out[1])
		}
		found := false
		for _, f := range factors {
			r, _ := audioproc.NewResampler(int(f*16000), 16000, 6, 0.99)
			want := make([]float32, r.OutLen(len(x)))
			r.Apply(x, want)
			if valid != len(want) || !slices.Equal(y[:valid], want) {
				continue
			}
			for _, v := range y[valid:] {
				if v != 0 {
					t.Fatalf("factor %v: nonzero after the valid %d samples", f, valid)
				}
			}
			found, drawn[r.OutLen(3000)] = true, true
		}
		if !found {
			t.Fatalf("position %d: the output is none of the factors' resamplings", pos)
		}
	}
	if len(drawn) != 3 {
		t.Fatalf("%d of 3 factors drawn in 30 samples", len(drawn))
	}
}

// Padded to 30 s, Whisper's log-mel skips the frames that see only the
// padding's zeros: the features equal audioproc's over the whole padded
// signal, exactly, for clips short of 30 s by more than half a window
// (frames skipped), by less (none skipped, the end's reflection sees
// samples), and longer (trimmed).
func TestWhisperPaddingEqualsWhole(t *testing.T) {
	if optest.RaceEnabled {
		t.Skip("12,000 frames: seconds under the race detector")
	}
	const n = audioproc.WhisperSamples
	bank, err := audioproc.NewWhisperBank(80)
	if err != nil {
		t.Fatal(err)
	}
	s, err := audioproc.NewSpectrogram(audioproc.WhisperNFFT, audioproc.WhisperNFFT, audioproc.WhisperHop, true, audioproc.Reflect, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, length := range []int{16000, n - 201, n - 199, n + 500} {
		x := chirp(1, length)
		got, shape, valid := run(t, "whisper_log_mel", nil, wav(length), x, 0, -1)
		padded := make([]float32, n)
		copy(padded, x)
		const T = n / audioproc.WhisperHop
		want := make([]float64, 80*T)
		audioproc.MelFrames(s, bank, padded, T, want, T)
		audioproc.LogMel(want)
		if valid != T || !slices.Equal(shape, []int{80, T}) {
			t.Fatalf("%d samples: shape %v, valid %d", length, shape, valid)
		}
		for i, w := range want {
			if got[i] != float32(w) {
				t.Fatalf("%d samples: band %d frame %d = %v, want %v", length, i/T, i%T, got[i], float32(w))
			}
		}
	}
}
