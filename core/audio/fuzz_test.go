//go:build !ffcv_nocodecs

package audio

import (
	"os"
	"testing"
)

// FuzzDecode: any bytes are refused with an error or decode whole; a clip
// that decodes whole gives the same samples through a window.
func FuzzDecode(f *testing.F) {
	ints := tone(300, 2, 16)
	f.Add(WAV(ints, nil, 2, 16, 8000))
	f.Add(WAV(nil, scaled(ints, 16), 2, 32, 8000))
	if b, err := EncodeFLAC(ints, 2, 16, 8000); err == nil {
		f.Add(b)
	}
	for _, name := range []string{"testdata/mono16k.mp3", "testdata/stereo16k.opus"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pcm, err := DecodeAll(data)
		if err != nil || pcm.Frames > 1<<16 {
			return
		}
		whole := pcm.Floats()
		n := int(pcm.Frames)
		out := make([]float32, len(whole))
		if err := Window(pcm.Codec, data, pcm.Channels, 0, n, n, out); err != nil {
			t.Fatalf("decodes whole, but not as a window: %v", err)
		}
		if pcm.Codec == 4 { // Opus: the same decode from the start
			return
		}
		for i := range out {
			if out[i] != whole[i] && !(out[i] != out[i] && whole[i] != whole[i]) {
				t.Fatalf("sample %d: window %g, whole %g", i, out[i], whole[i])
			}
		}
	})
}
