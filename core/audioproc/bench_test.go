package audioproc

import (
	"fmt"
	"math"
	"testing"
)

// BenchmarkWhisperLogMel is Whisper's 80-band log-mel of 30 s of 16 kHz
// audio (3000 frames) at every lane width this build and CPU have (1:
// the Go transform, as FFCV_GO_SIMD=off); µs/audio-s is the cost per
// second of audio.
func BenchmarkWhisperLogMel(b *testing.B) {
	x := make([]float32, WhisperSamples)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.05) * 0.3)
	}
	s, _ := NewSpectrogram(WhisperNFFT, WhisperNFFT, WhisperHop, true, Reflect, 2)
	bank, _ := NewWhisperBank(80)
	frames := WhisperSamples / WhisperHop
	out := make([]float64, 80*frames)
	defer func(l int) { lanes = l }(lanes)
	for _, width := range []int{4, 2, 1} {
		if width > lanes {
			continue
		}
		lanes = width
		b.Run(fmt.Sprintf("lanes=%d", width), func(b *testing.B) {
			b.SetBytes(4 * WhisperSamples)
			for b.Loop() {
				MelFrames(s, bank, x, frames, out, frames)
				LogMel(out)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/30/1e3, "µs/audio-s")
		})
	}
}

// BenchmarkResample is 30 s of 22.05 kHz audio resampled to 16 kHz.
func BenchmarkResample(b *testing.B) {
	x := make([]float32, 30*22050)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.05) * 0.3)
	}
	r, _ := NewResampler(22050, 16000, 6, 0.99)
	out := make([]float32, r.OutLen(len(x)))
	for b.Loop() {
		r.Apply(x, out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/30/1e3, "µs/audio-s")
}

// BenchmarkRFFT400 is one real transform of n_fft 400.
func BenchmarkRFFT400(b *testing.B) {
	r, _ := NewRFFT(400)
	x := make([]float64, 400)
	for i := range x {
		x[i] = math.Sin(float64(i) * 0.05)
	}
	out := make([]complex128, 201)
	for b.Loop() {
		r.Forward(x, out)
	}
}
