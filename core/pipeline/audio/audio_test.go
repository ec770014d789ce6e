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

// run builds op, checks its output against want, and runs it on x for
// the sample at position pos, with a valid length recorded first when
// valid ≥ 0; it returns the output and the valid length after it.
func run(t *testing.T, name string, args map[string]any, in pipeline.Spec, x []float32, pos uint64, valid int) ([]float32, pipeline.Spec, int) {
	t.Helper()
	op := optest.NewOp(t, name, args)
	out, err := op.Out(in)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c := pipeline.NewCtx()
	defer c.Close()
	c.Pos, c.Sample, c.Seed = pos, pos, 7
	last := in.Shape[len(in.Shape)-1]
	if valid >= 0 {
		SetLength(c, valid, last)
	}
	y := make([]byte, out.Bytes())
	if err := op.Run(c, 0, bytesOf(x), y); err != nil {
		t.Fatal(err)
	}
	return floatsOf(y), out, Length(c, out.Shape[len(out.Shape)-1])
}

func wav(shape ...int) pipeline.Spec { return pipeline.Spec{Shape: shape, DType: "<f4"} }

// Each operation's output shape, and the inputs and arguments it refuses.
func TestOutAndArguments(t *testing.T) {
	for _, tc := range []struct {
		op   string
		args map[string]any
		in   pipeline.Spec
		want string // the output shape, or a part of the error
	}{
		{"audio_mono", nil, wav(2, 100), "[1 100]"},
		{"audio_mono", map[string]any{"keepdim": false}, wav(2, 100), "[100]"},
		{"audio_mono", nil, wav(100), "[100]"},
		{"audio_resample", map[string]any{"orig_freq": 22050, "new_freq": 16000}, wav(2, 1000), "[2 726]"},
		{"audio_resample", map[string]any{"orig_freq": 8000, "new_freq": 16000}, wav(5), "[10]"},
		{"audio_speed", map[string]any{"orig_freq": 16000, "factors": []float64{0.9, 1.1}}, wav(1000), "[1112]"},
		{"mel_spectrogram", nil, wav(16000), "[128 81]"},
		{"mel_spectrogram", map[string]any{"n_fft": 512, "hop_length": 160, "n_mels": 40, "center": false}, wav(2, 16000), "[2 40 97]"},
		{"whisper_log_mel", nil, wav(100), "[80 3000]"},
		{"whisper_log_mel", map[string]any{"n_mels": 128, "pad_or_trim": false}, wav(16000), "[128 100]"},
		{"time_masking", map[string]any{"mask_param": 5}, wav(2, 40, 81), "[2 40 81]"},
		{"frequency_masking", map[string]any{"mask_param": 5}, wav(40, 81), "[40 81]"},
		// refused inputs
		{"audio_mono", nil, pipeline.Spec{Shape: []int{2, 100}, DType: "<i2"}, "needs float32 waveforms"},
		{"mel_spectrogram", nil, wav(2, 2, 100), "needs float32 waveforms"},
		{"mel_spectrogram", map[string]any{"center": false}, wav(100), "make no frame"},
		{"whisper_log_mel", map[string]any{"pad_or_trim": false}, wav(100), "make no frame"},
		{"time_masking", map[string]any{"mask_param": 5}, wav(100), "needs float32 spectrograms"},
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
			got := fmt.Sprint(out.Shape)
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) || (err == nil && out.DType != "<f4") {
				t.Fatalf("got %s %s, want %s", got, out.DType, tc.want)
			}
		})
	}
}

// A sample's valid length: each operation computes on the valid part as
// if it were the whole sample, writes zeros after its own, and records
// its own length. The input's padding is not zero here, so reading it
// would show.
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
			rows := out.Shape[0] * func() int {
				if len(out.Shape) == 3 {
					return out.Shape[1]
				}
				return 1
			}()
			m, wm := out.Shape[len(out.Shape)-1], wantOut.Shape[len(wantOut.Shape)-1]
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
	// Without a recorded length (or one recorded for another sample) the
	// whole axis is the sample's.
	c := pipeline.NewCtx()
	c.Pos = 1
	SetLength(c, 10, 100)
	if Length(c, 100) != 10 || Length(c, 99) != 99 {
		t.Fatal("length not kept for its sample and axis")
	}
	c.Pos = 2
	if Length(c, 100) != 100 {
		t.Fatal("length of another sample used")
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
		x := make([]float32, F*T)
		for i := range x {
			x[i] = 1
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
					if in {
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
		if out.Shape[0] != 3334 {
			t.Fatalf("output of %d samples, want the slowest factor's 3334", out.Shape[0])
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
