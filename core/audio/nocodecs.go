//go:build ffcv_nocodecs

package audio

import "github.com/ffcv-go/ffcv-go/core/field"

// A build without the C codecs (-tags ffcv_nocodecs): FLAC, MP3 and Opus
// are refused, saying so; WAV, in Go, is read as ever.

func errNoCodec(codec byte) error {
	return corruptf("%s: this build of ffcv_go has no %s codec (built with -tags ffcv_nocodecs: WAV only)",
		field.AudioCodecName(codec), field.AudioCodecName(codec))
}

func cInfo(codec byte, _ []byte) (Info, error) { return Info{}, errNoCodec(codec) }

func cWindow(codec byte, _ []byte, _ int, _ uint64, _, _ int, _ []float32) (uint64, error) {
	return 0, errNoCodec(codec)
}

func flacAll([]byte, []int32, uint64) (uint64, error) { return 0, errNoCodec(field.AudioFLAC) }

func flacEncode([]int32, int, int, int) ([]byte, error) { return nil, errNoCodec(field.AudioFLAC) }
