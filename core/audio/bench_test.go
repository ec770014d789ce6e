//go:build !ffcv_nocodecs

package audio

import "testing"

// BenchmarkFLACWindow: a 5 s window of a 15 s, 16 kHz FLAC clip, as
// RandomAudioCropDecoder reads it.
func BenchmarkFLACWindow(b *testing.B) {
	const rate = 16000
	data, err := EncodeFLAC(tone(15*rate, 1, 16), 1, 16, rate)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]float32, 5*rate)
	b.SetBytes(5 * rate * 4)
	for i := 0; i < b.N; i++ {
		start := uint64(i*7919) % (10 * rate)
		if err := Window(1, data, 1, start, 5*rate, 5*rate, out); err != nil {
			b.Fatal(err)
		}
	}
}
