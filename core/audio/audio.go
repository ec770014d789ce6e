// Package audio decodes and encodes the clips an AudioField stores: WAV
// (PCM and float, in Go), FLAC (libFLAC: decoding with seeking, and
// encoding), MP3 (minimp3, CC0, vendored) and Ogg/Opus (libopusfile). A
// window decodes only what lies under it: WAV by offset, FLAC by its seek
// table, Opus by its pages' granule positions, MP3 by an index of frame
// headers (from the frames just before it, for the bit reservoir).
//
// Every decode gives float32 samples, planar: channel c's frames at
// out[c*stride ...]. Integer samples are scaled by 2^-(bits-1), as
// libsndfile and FFmpeg scale them.
package audio

import (
	"bytes"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// DataError is an error about a clip's content (truncated, corrupt, not
// audio): its message says what alone, and it wraps field.ErrData, which
// the C ABI reports as bad sample data.
type DataError struct{ Msg string }

func (e *DataError) Error() string { return e.Msg }
func (e *DataError) Unwrap() error { return field.ErrData }

func corruptf(format string, args ...any) error {
	return &DataError{fmt.Sprintf(format, args...)}
}

// Info is what a clip's header says.
type Info struct {
	Codec      byte // field.AudioFLAC, ...
	SampleRate int
	Channels   int
	Bits       int    // stored integer width; 32 for float WAV, 0 for MP3 and Opus
	Frames     uint64 // frames per channel the header gives; 0 when it gives none
}

// Detect names the codec of data by its first bytes, or refuses it.
func Detect(data []byte) (byte, error) {
	switch {
	case len(data) == 0:
		return 0, corruptf("empty (0 bytes)")
	case bytes.HasPrefix(data, []byte("fLaC")):
		return field.AudioFLAC, nil
	case len(data) >= 12 && (string(data[:4]) == "RIFF" || string(data[:4]) == "RF64") && string(data[8:12]) == "WAVE":
		return field.AudioWAV, nil
	case bytes.HasPrefix(data, []byte("OggS")):
		if !bytes.Contains(data[:min(len(data), 512)], []byte("OpusHead")) {
			return 0, corruptf("an Ogg stream that is not Opus (Vorbis and FLAC-in-Ogg are not supported)")
		}
		return field.AudioOpus, nil
	case bytes.HasPrefix(data, []byte("ID3")) || mp3Sync(data):
		return field.AudioMP3, nil
	}
	head := data[:min(len(data), 4)]
	return 0, corruptf("unknown codec (not WAV, FLAC, MP3 or Ogg/Opus; starts with %q)", head)
}

// Probe reads the header of a clip.
func Probe(data []byte) (Info, error) {
	codec, err := Detect(data)
	if err != nil {
		return Info{}, err
	}
	var info Info
	switch codec {
	case field.AudioWAV:
		w, err := parseWAV(data)
		if err != nil {
			return Info{}, err
		}
		info = w.info()
	default:
		if info, err = cInfo(codec, data); err != nil {
			return Info{}, err
		}
	}
	info.Codec = codec
	if err := checkInfo(info); err != nil {
		return Info{}, err
	}
	return info, nil
}

func checkInfo(i Info) error {
	switch {
	case i.SampleRate <= 0:
		return corruptf("sample rate %d in the %s header", i.SampleRate, field.AudioCodecName(i.Codec))
	case i.Channels < 1 || i.Channels > field.MaxAudioChannels:
		return corruptf("%d channels in the %s header (1 to %d)", i.Channels, field.AudioCodecName(i.Codec), field.MaxAudioChannels)
	}
	return nil
}

// Window decodes frames [start, start+n) of a clip of the given codec
// and channels into out (channel c's at out[c*stride:]), exactly n of
// them: a clip that ends before start+n is an error (truncated), never a
// short window.
func Window(codec byte, data []byte, channels int, start uint64, n, stride int, out []float32) error {
	if n == 0 {
		return nil
	}
	if channels < 1 || n < 0 || stride < n || len(out) < (channels-1)*stride+n {
		return fmt.Errorf("audio: window of %d frames × %d channels (stride %d) in %d floats", n, channels, stride, len(out))
	}
	var got uint64
	var err error
	switch codec {
	case field.AudioWAV:
		var w wavFile
		if w, err = parseWAV(data); err == nil {
			if w.channels != channels {
				return corruptf("the WAV has %d channels, its metadata %d", w.channels, channels)
			}
			got, err = w.window(start, n, stride, out)
		}
	case field.AudioFLAC, field.AudioOpus, field.AudioMP3:
		got, err = cWindow(codec, data, channels, start, n, stride, out)
	default:
		return corruptf("unknown codec %d", codec)
	}
	if err != nil {
		return err
	}
	if got < uint64(n) {
		return corruptf("truncated %s: frames [%d, %d) asked, the clip ends at frame %d",
			field.AudioCodecName(codec), start, start+uint64(n), start+got)
	}
	return nil
}

// PCM is a whole clip, decoded: integer samples (Int, Bits wide) for
// integer sources, floats (Float) for the others; planar, Frames apart.
type PCM struct {
	Info
	Int   []int32
	Float []float32
}

// DecodeAll decodes a whole clip, checking it against its header: a
// clip whose frames stop short of (or run past) the count its header
// gives -- FLAC's STREAMINFO, WAV's data size, Opus's last granule
// position, MP3's Xing/Info frame count -- is an error, as is any
// corrupt frame. Frames is then the count decoded.
func DecodeAll(data []byte) (PCM, error) {
	info, err := Probe(data)
	if err != nil {
		return PCM{}, err
	}
	pcm := PCM{Info: info}
	// The decode is allocated from the header's count: a count no file of
	// this size can hold (FLAC's densest frames, digital silence, give
	// about 15000 samples a byte; Opus's 5760 a byte) is refused first.
	if info.Codec != field.AudioWAV && info.Frames*uint64(info.Channels) > 16384*uint64(len(data))+1<<19 {
		return PCM{}, corruptf("its %s header gives %d frames of %d channels, more than a %d-byte file holds",
			field.AudioCodecName(info.Codec), info.Frames, info.Channels, len(data))
	}
	switch info.Codec {
	case field.AudioWAV:
		w, _ := parseWAV(data)
		pcm.Frames = w.frames
		if w.float {
			pcm.Float = make([]float32, w.frames*uint64(w.channels))
			_, err = w.window(0, int(w.frames), int(w.frames), pcm.Float)
		} else {
			pcm.Int = w.ints()
		}
	case field.AudioFLAC:
		if info.Frames == 0 {
			return PCM{}, corruptf("the FLAC STREAMINFO gives no total sample count (a stream cut while it was written?)")
		}
		if info.Bits > 24 {
			return PCM{}, corruptf("FLAC of %d bits per sample (at most 24)", info.Bits)
		}
		if info.Frames*uint64(info.Channels) > 1<<32 {
			return PCM{}, corruptf("FLAC of %d frames", info.Frames)
		}
		pcm.Int = make([]int32, info.Frames*uint64(info.Channels))
		got, err := flacAll(data, pcm.Int, info.Frames)
		if err != nil {
			return PCM{}, err
		}
		if got != info.Frames {
			return PCM{}, corruptf("truncated FLAC: its STREAMINFO gives %d frames, %d decode", info.Frames, got)
		}
	case field.AudioOpus, field.AudioMP3:
		what := "its last granule position gives"
		if info.Codec == field.AudioMP3 {
			if _, err := scanMP3(data); err != nil {
				return PCM{}, err
			}
			what = "its Xing/Info header (or its frame headers) give"
		}
		if info.Frames == 0 || info.Frames*uint64(info.Channels) > 1<<32 {
			return PCM{}, corruptf("%s of %d frames", field.AudioCodecName(info.Codec), info.Frames)
		}
		pcm.Float = make([]float32, info.Frames*uint64(info.Channels))
		got, err := cWindow(info.Codec, data, info.Channels, 0, int(info.Frames), int(info.Frames), pcm.Float)
		if err != nil {
			return PCM{}, err
		}
		if got != info.Frames {
			return PCM{}, corruptf("truncated %s: %s %d frames, %d decode",
				field.AudioCodecName(info.Codec), what, info.Frames, got)
		}
	}
	if err != nil {
		return PCM{}, err
	}
	if pcm.Frames == 0 {
		return PCM{}, corruptf("the %s holds no audio (0 frames)", field.AudioCodecName(info.Codec))
	}
	return pcm, nil
}

// Floats returns the clip's samples as floats (planar), scaling integers.
func (p PCM) Floats() []float32 {
	if p.Float != nil {
		return p.Float
	}
	out := make([]float32, len(p.Int))
	scale := float32(1) / float32(uint64(1)<<(p.Bits-1))
	for i, x := range p.Int {
		out[i] = float32(x) * scale
	}
	return out
}

// EncodeFLAC encodes planar integer samples of the given width (4 to 24
// bits) as FLAC (compression level 5, a seek point a second).
func EncodeFLAC(pcm []int32, channels, bits, rate int) ([]byte, error) {
	if channels < 1 || channels > field.MaxAudioChannels || len(pcm) == 0 || len(pcm)%channels != 0 {
		return nil, fmt.Errorf("audio: FLAC of %d samples over %d channels", len(pcm), channels)
	}
	if bits < 4 || bits > 24 || rate < 1 || rate > 655350 {
		return nil, fmt.Errorf("audio: FLAC of %d bits at %d Hz", bits, rate)
	}
	return flacEncode(pcm, channels, bits, rate)
}

// Quantize rounds float samples to bits-wide integers, clipping to the
// range ([-1, 1) at full scale).
func Quantize(x []float32, bits int) []int32 {
	out := make([]int32, len(x))
	scale := float64(uint64(1) << (bits - 1))
	lo, hi := -scale, scale-1
	for i, v := range x {
		f := float64(v) * scale
		switch {
		case f != f:
			f = 0
		case f < lo:
			f = lo
		case f > hi:
			f = hi
		}
		if f >= 0 {
			out[i] = int32(f + 0.5)
		} else {
			out[i] = -int32(-f + 0.5)
		}
	}
	return out
}
