//go:build !ffcv_nocodecs

package waveform_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/audioenc"
	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/audio"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
	"github.com/ffcv-go/ffcv-go/core/pipeline/waveform"
)

const rate = 1000

// lengths are the clips' frames: longer than the windows, and shorter.
var lengths = []int{2500, 700, 1200}

// sample is clip i's value at frame k of channel c (16-bit exact).
func sample(i, c, k int) int16 { return int16((i+1)*1000 + c*500 + k%400 - 200) }

// audioFile writes an Audio field of stereo int16 clips (FLAC).
func audioFile(t *testing.T, storage string) *beton.Reader {
	t.Helper()
	descs := []field.Desc{{Type: field.Audio, Name: "audio", Audio: &field.AudioArgs{Storage: storage}}}
	enc, err := audioenc.NewEncoder(descs[0], audioenc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audio.beton")
	return betontest.Write(t, path, descs, []field.Encoder{enc},
		beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 2}, len(lengths), func(i int) []field.Value {
			data := make([]byte, 2*2*lengths[i])
			for c := 0; c < 2; c++ {
				for k := 0; k < lengths[i]; k++ {
					binary.LittleEndian.PutUint16(data[2*(c*lengths[i]+k):], uint16(sample(i, c, k)))
				}
			}
			return []field.Value{{Data: data, Channels: 2, Int: rate, Width: audioenc.Int16}}
		})
}

func run(t *testing.T, p *pipeline.Program, r *beton.Reader, i int, pos uint64) []byte {
	t.Helper()
	col, heap, err := r.Read(uint64(i), 0)
	if err != nil {
		t.Fatal(err)
	}
	c := pipeline.NewCtx()
	c.Sample, c.Pos, c.Col, c.Heap = uint64(i), pos, col, heap
	out := make([]byte, p.SampleOut.Bytes())
	if err := p.Run(c, &pipeline.Scratch{}, nil, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecoders(t *testing.T) {
	for _, storage := range []string{"flac", "source"} {
		r := audioFile(t, storage)
		for _, tc := range []struct {
			name   string
			args   map[string]any
			frames int
			random bool
			mono   bool
		}{
			{"audio", map[string]any{}, 2500, false, false},
			{"audio", map[string]any{"max_seconds": 1.0}, 1000, false, false},
			{"audio", map[string]any{"max_seconds": 0.9, "mono": true}, 900, false, true},
			{"audio_random_crop", map[string]any{"seconds": 1.0}, 1000, true, false},
			{"audio_random_crop", map[string]any{"seconds": 0.5, "mono": true}, 500, true, true},
		} {
			p := optest.Build(t, r, 0, optest.Named{Name: tc.name, Args: tc.args})
			channels := 2
			if tc.mono {
				channels = 1
			}
			if c, n, ok := waveform.Layout(p.SampleOut); !ok || c != channels || n != tc.frames {
				t.Fatalf("%s %v: layout %v", tc.name, tc.args, p.SampleOut)
			}
			starts := map[int]bool{}
			for i, length := range lengths {
				for pos := uint64(0); pos < 6; pos++ {
					out := run(t, p, r, i, pos)
					n := min(length, tc.frames)
					start := -1
					for c := 0; c < channels; c++ {
						row := waveform.Row(out, tc.frames, c)
						if got := waveform.Length(out[c*(8+4*tc.frames):]); got != n {
							t.Fatalf("%s %v clip %d: length %d, want %d", tc.name, tc.args, i, got, n)
						}
						if start < 0 { // the window's start, from its first sample
							for s := 0; s+n <= length; s++ {
								if want := value(i, c, s, tc.mono); row[0] == want && row[n-1] == value(i, c, s+n-1, tc.mono) {
									start = s
									break
								}
							}
						}
						for k := 0; k < tc.frames; k++ {
							want := float32(0)
							if k < n {
								want = value(i, c, start+k, tc.mono)
							}
							if row[k] != want {
								t.Fatalf("%s %v clip %d channel %d frame %d = %g, want %g (start %d)", tc.name, tc.args, i, c, k, row[k], want, start)
							}
						}
					}
					if !tc.random && start != 0 {
						t.Fatalf("%s: starts at %d", tc.name, start)
					}
					if i == 0 {
						starts[start] = true
					}
				}
			}
			if tc.random && len(starts) < 3 {
				t.Fatalf("%s: windows of clip 0 start at %v over 6 positions", tc.name, starts)
			}
		}
	}
}

// value is clip i's decoded sample: channel c's, or the channels' mean.
func value(i, c, k int, mono bool) float32 {
	if !mono {
		return float32(sample(i, c, k)) / 32768
	}
	a, b := float32(sample(i, 0, k))/32768, float32(sample(i, 1, k))/32768
	return (a + b) / 2
}

func TestBadArgs(t *testing.T) {
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "audio_random_crop", Args: map[string]any{"seconds": 0}, Want: "seconds 0 must be positive"},
		{Name: "audio_random_crop", Args: map[string]any{"seconds": -1}, Want: "must be positive"},
		{Name: "audio", Args: map[string]any{"max_seconds": -2}, Want: "max_seconds -2"},
		{Name: "audio", Args: map[string]any{"seconds": 2}, Want: "AudioDecoder takes max_seconds"},
		{Name: "audio", Args: map[string]any{"frames": 2}, Want: "frames"},
	})
}

func TestLayout(t *testing.T) {
	c, n, ok := waveform.Layout(waveform.Spec(2, 1000))
	if !ok || c != 2 || n != 1000 {
		t.Fatal(c, n, ok)
	}
	if _, _, ok := waveform.Layout(pipeline.Spec{Shape: []int{4, 8, 3}, DType: "|u1"}); ok {
		t.Fatal("an image taken for a waveform")
	}
}

// A decoder's valid length travels through the audio operations in their
// rows: each stage's rows hold the length of its own valid part (clips
// shorter than the slot), the rest zero.
func TestLengthThroughOperations(t *testing.T) {
	r := audioFile(t, "flac")
	resample := optest.Named{Name: "audio_resample", Args: map[string]any{"orig_freq": rate, "new_freq": 1500}}
	mel := optest.Named{Name: "mel_spectrogram", Args: map[string]any{"sample_rate": 1500, "n_fft": 64,
		"hop_length": 32, "n_mels": 8}}
	for _, tc := range []struct {
		ops  []optest.Named
		lead []int
		want func(n int) int // the output's valid length of a clip of n frames
	}{
		{[]optest.Named{{Name: "audio_gain", Args: map[string]any{"min_db": -3, "max_db": 3}}}, []int{2},
			func(n int) int { return n }},
		{[]optest.Named{{Name: "audio_mono"}}, []int{1}, func(n int) int { return n }},
		{[]optest.Named{resample}, []int{2}, func(n int) int { return (n*3 + 1) / 2 }},
		{[]optest.Named{resample, mel}, []int{2, 8}, func(n int) int { return 1 + (n*3+1)/2/32 }},
		{[]optest.Named{{Name: "audio_mono"}, resample, mel,
			{Name: "time_masking", Args: map[string]any{"mask_param": 10}}}, []int{8},
			func(n int) int { return 1 + (n*3+1)/2/32 }},
		{[]optest.Named{{Name: "audio_mono"}, {Name: "whisper_log_mel", Args: map[string]any{"pad_or_trim": false}}},
			[]int{80}, func(n int) int { return n / 160 }},
	} {
		ops := append([]optest.Named{{Name: "audio", Args: map[string]any{}}}, tc.ops...)
		p := optest.Build(t, r, 0, ops...)
		lead, m, ok := waveform.Rows(p.SampleOut)
		if !ok || !slices.Equal(lead, tc.lead) {
			t.Fatalf("%v: output %v, want rows of shape %v", tc.ops, p.SampleOut, tc.lead)
		}
		for i, n := range lengths {
			out := run(t, p, r, i, 0)
			rows := len(out) / (8 + 4*m)
			for row := 0; row < rows; row++ {
				if got := waveform.Length(out[row*(8+4*m):]); got != tc.want(n) {
					t.Fatalf("%v clip %d row %d: length %d, want %d", tc.ops, i, row, got, tc.want(n))
				}
				for k, v := range waveform.Row(out, m, row)[tc.want(n):] {
					if v != 0 {
						t.Fatalf("%v clip %d row %d: %v past the valid length, at %d", tc.ops, i, row, v, tc.want(n)+k)
					}
				}
			}
		}
	}
}

// AddNoise adds a clip of the noise field at the drawn SNR: on each row's
// valid samples the added part's energy stands at snr_db below the
// clip's; the padding stays zero; draws are keyed.
func TestAddNoise(t *testing.T) {
	r := audioFile(t, "flac")
	for _, tc := range []struct {
		args map[string]any
		lo   float64
		hi   float64
	}{
		{map[string]any{"snr_db": []float64{10, 10}, "noise": "audio"}, 10, 10},
		{map[string]any{"snr_db": []float64{0, 20}, "noise": "audio"}, 0, 20},
	} {
		clean := optest.Build(t, r, 0, optest.Named{Name: "audio", Args: map[string]any{}})
		noisy := optest.Build(t, r, 0, optest.Named{Name: "audio", Args: map[string]any{}},
			optest.Named{Name: "audio_add_noise", Args: tc.args})
		_, m, _ := waveform.Rows(noisy.SampleOut)
		for i, n := range lengths {
			for pos := uint64(0); pos < 3; pos++ {
				x, y := run(t, clean, r, i, pos), run(t, noisy, r, i, pos)
				if !slices.Equal(y, run(t, noisy, r, i, pos)) {
					t.Fatalf("clip %d: drawn twice differently", i)
				}
				for c := 0; c < 2; c++ {
					if waveform.Length(y[c*(8+4*m):]) != n {
						t.Fatalf("clip %d: length %d, want %d", i, waveform.Length(y[c*(8+4*m):]), n)
					}
					xs, ys := waveform.Row(x, m, c), waveform.Row(y, m, c)
					var es, en float64
					for k := 0; k < n; k++ {
						d := float64(ys[k]) - float64(xs[k])
						es, en = es+float64(xs[k])*float64(xs[k]), en+d*d
					}
					snr := 10 * math.Log10(es/en)
					if snr < tc.lo-0.01 || snr > tc.hi+0.01 {
						t.Fatalf("clip %d channel %d: SNR %.3f dB, want in [%v, %v]", i, c, snr, tc.lo, tc.hi)
					}
					for k, v := range ys[n:] {
						if v != 0 {
							t.Fatalf("clip %d: %v past the valid length at %d", i, v, n+k)
						}
					}
				}
			}
		}
	}
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "audio_add_noise", Args: map[string]any{"snr_db": []float64{20, 10}, "noise": "n"}, Want: "low <= high"},
		{Name: "audio_add_noise", Args: map[string]any{"snr_db": []float64{10}, "noise": "n"}, Want: "give (low, high)"},
		{Name: "audio_add_noise", Args: map[string]any{"snr_db": []float64{0, 10}}, Want: "noise: name the AudioField"},
	})
	if _, err := pipeline.Build(r, 0, []json.RawMessage{optest.Spec(t, "audio", nil),
		optest.Spec(t, "audio_add_noise", map[string]any{"snr_db": []float64{0, 10}, "noise": "label"})}); err == nil ||
		!strings.Contains(err.Error(), `noise "label" is not an AudioField`) {
		t.Fatalf("a noise field not in the file: %v", err)
	}
}
