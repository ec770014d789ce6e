//go:build !ffcv_nocodecs

package audioenc

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/audio"
	"github.com/ffcv-go/ffcv-go/core/audioproc"
	"github.com/ffcv-go/ffcv-go/core/field"
)

func int16s(xs ...int16) []byte {
	b := make([]byte, 2*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(x))
	}
	return b
}

func float32s(xs ...float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// decode is the stored clip's samples, as the loader decodes them.
func decode(t *testing.T, heap []byte, m field.AudioMeta) []float32 {
	t.Helper()
	out := make([]float32, int(m.Frames)*m.Channels)
	if err := audio.Window(m.Codec, heap, m.Channels, 0, int(m.Frames), int(m.Frames), out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEncode(t *testing.T) {
	dir := t.TempDir()
	wav := audio.WAV([]int32{1, -2, 300, -32768, 32767, 0}, nil, 2, 16, 8000) // (2, 3)
	path := filepath.Join(dir, "clip.wav")
	if err := os.WriteFile(path, wav, 0o644); err != nil {
		t.Fatal(err)
	}
	planar := []float32{1. / 32768, -2. / 32768, 300. / 32768, -1, 32767. / 32768, 0}
	for _, tc := range []struct {
		name  string
		v     field.Value
		o     Options
		codec byte
		bits  int
		want  []float32
	}{
		{"file to flac", field.Value{Path: path}, Options{}, field.AudioFLAC, 16, planar},
		{"file kept", field.Value{Path: path}, Options{Storage: "source"}, field.AudioWAV, 16, planar},
		{"bytes to flac", field.Value{Data: wav, Encoded: true}, Options{}, field.AudioFLAC, 16, planar},
		{"int16 array to flac", field.Value{Data: int16s(1, -2, 300, -32768, 32767, 0), Channels: 2, Int: 8000, Width: Int16},
			Options{}, field.AudioFLAC, 16, planar},
		{"float array kept as wav", field.Value{Data: float32s(0.1, -0.2, 0.3, 0.25, 0.5, -1), Channels: 2, Int: 8000, Width: Float32},
			Options{Storage: "source"}, field.AudioWAV, 32, []float32{0.1, -0.2, 0.3, 0.25, 0.5, -1}},
		{"float array to 16-bit flac", field.Value{Data: float32s(0.25, -0.5, 1.5), Channels: 1, Int: 8000, Width: Float32},
			Options{}, field.AudioFLAC, 16, []float32{0.25, -0.5, 32767. / 32768}},
		{"float array to 24-bit flac", field.Value{Data: float32s(0.25, -0.5), Channels: 1, Int: 8000, Width: Float32},
			Options{Bits: 24}, field.AudioFLAC, 24, []float32{0.25, -0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			heap, m, err := Encode(tc.v, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if m.Codec != tc.codec || m.Bits != tc.bits || m.SampleRate != 8000 || m.Size != uint64(len(heap)) ||
				int(m.Frames)*m.Channels != len(tc.want) {
				t.Fatalf("meta %+v", m)
			}
			got := decode(t, heap, m)
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("samples %v, want %v", got, tc.want)
				}
			}
			// The writer's encoder takes the clip Encode made as it is.
			enc, err := encoder{tc.o}.Encode(field.Value{Column: m.Column(), Data: heap}, 0)
			if err != nil || string(enc.Heap) != string(heap) || field.ParseAudioMeta(enc.Column) != m {
				t.Fatalf("pre-encoded: %v", err)
			}
		})
	}
}

// TestEncodeResamples: write-time resampling gives the resampler's samples
// at the new rate (quantized to the stored bits), and leaves a clip already
// at that rate as it is.
func TestEncodeResamples(t *testing.T) {
	src := make([]float32, 2*800) // two channels of 0.1 s at 8 kHz
	for i := range 800 {
		src[i] = float32(0.5 * math.Sin(2*math.Pi*440*float64(i)/8000))
		src[800+i] = float32(0.25 * math.Cos(2*math.Pi*1000*float64(i)/8000))
	}
	arr := field.Value{Data: float32s(src...), Channels: 2, Int: 8000, Width: Float32}
	r, err := audioproc.NewResampler(8000, 11025, 6, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	n := r.OutLen(800)
	want := make([]float32, 2*n)
	r.Apply(src[:800], want[:n])
	r.Apply(src[800:], want[n:])
	for _, tc := range []struct {
		name  string
		o     Options
		codec byte
		bits  int
		tol   float64
	}{
		{"to float wav", Options{Storage: "source", Resample: 11025}, field.AudioWAV, 32, 0},
		{"to 24-bit flac", Options{Bits: 24, Resample: 11025}, field.AudioFLAC, 24, 1.0 / (1 << 23)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			heap, m, err := Encode(arr, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if m.SampleRate != 11025 || m.Codec != tc.codec || m.Bits != tc.bits || int(m.Frames) != n || m.Channels != 2 {
				t.Fatalf("meta %+v, want %d frames at 11025 Hz", m, n)
			}
			got := decode(t, heap, m)
			for i := range got {
				if math.Abs(float64(got[i]-want[i])) > tc.tol {
					t.Fatalf("sample %d: %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
	// A clip at the target rate is not resampled: the source's bytes stay.
	wav := audio.WAV([]int32{1, 2, 3}, nil, 1, 16, 8000)
	heap, m, err := Encode(field.Value{Data: wav, Encoded: true}, Options{Storage: "source", Resample: 8000})
	if err != nil || string(heap) != string(wav) || m.Bits != 16 {
		t.Fatalf("same rate: %v, %+v", err, m)
	}
}

func TestEncodeRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.flac")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		v    field.Value
		o    Options
		want string
	}{
		{"empty file", field.Value{Path: empty}, Options{}, empty + ": empty (0 bytes)"},
		{"missing file", field.Value{Path: filepath.Join(dir, "nope.wav")}, Options{}, "nope.wav"},
		{"unknown codec", field.Value{Data: []byte("hello, world"), Encoded: true}, Options{}, "the audio given as bytes: unknown codec (not WAV, FLAC, MP3 or Ogg/Opus"},
		{"rate 0 array", field.Value{Data: int16s(1, 2), Channels: 1, Width: Int16}, Options{}, "sample rate 0"},
		{"nan sample", field.Value{Data: float32s(0, float32(math.NaN())), Channels: 1, Int: 8000, Width: Float32}, Options{}, "sample 1 of channel 0 is NaN"},
		{"no frames", field.Value{Data: nil, Channels: 1, Int: 8000, Width: Int16}, Options{}, "no samples"},
		{"negative resampling rate", field.Value{Path: empty}, Options{Resample: -16000}, "resample -16000 must be a positive rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Encode(tc.v, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Encode = %v, want %q", err, tc.want)
			}
			if tc.o.Resample == 0 && !errors.Is(err, field.ErrData) {
				t.Fatalf("%v does not wrap ErrData", err)
			}
		})
	}
}
