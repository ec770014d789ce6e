// Package waveform holds the decoders of AudioField: a clip's frames
// (whole, its first seconds, or a random window drawn per sample and
// epoch), decoded straight into the batch as float32, optionally mixed
// down to mono, with the clip's valid length; and the layout that carries
// that length through every audio operation to the batch.
//
// # Layout
//
// A decoder's per-sample output is a uint8 array of shape (C, 8 + 4·N):
// C channel rows, each an int64 (little-endian) holding the number of
// valid frames, then N float32 samples, zero past that length. Every row
// holds the same length, so the layout is known from the shape alone
// (Layout), and a batch (B, C, 8 + 4·N) is viewed in Python, without a
// copy, as the waveforms (B, C, N) float32 and the lengths (B,) int64.
// The audio operations (core/pipeline/audio) read and write the same
// layout with more leading axes (a spectrogram's (n_mels, 8 + 4·T) or
// (C, n_mels, 8 + 4·T)): Rows and SpecOf.
package waveform

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/audio"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

func init() {
	pipeline.RegisterDecoder("audio", newDecoder(false))
	pipeline.RegisterDecoder("audio_random_crop", newDecoder(true))
}

// Header is the size of the length in front of each channel row.
const Header = 8

// Spec is the output spec of channels × frames waveforms.
func Spec(channels, frames int) pipeline.Spec {
	return pipeline.Spec{Shape: []int{channels, Header + 4*frames}, DType: "|u1"}
}

// SpecOf is the output spec of rows of frames samples, the rows shaped
// lead (one axis or more).
func SpecOf(lead []int, frames int) pipeline.Spec {
	return pipeline.Spec{Shape: append(append([]int(nil), lead...), Header+4*frames), DType: "|u1"}
}

// Layout reads a waveform spec's channels and frames; ok is false for a
// spec of another layout.
func Layout(s pipeline.Spec) (channels, frames int, ok bool) {
	if len(s.Shape) != 2 {
		return 0, 0, false
	}
	lead, frames, ok := Rows(s)
	if !ok {
		return 0, 0, false
	}
	return lead[0], frames, true
}

// Rows reads the leading shape and the frames of a spec of rows with a
// valid length, of any number of leading axes; ok is false for a spec of
// another layout.
func Rows(s pipeline.Spec) (lead []int, frames int, ok bool) {
	n := len(s.Shape)
	if s.DType != "|u1" || n < 2 || s.Shape[n-1] < Header || (s.Shape[n-1]-Header)%4 != 0 {
		return nil, 0, false
	}
	for _, d := range s.Shape[:n-1] {
		if d < 1 {
			return nil, 0, false
		}
	}
	return s.Shape[:n-1], (s.Shape[n-1] - Header) / 4, true
}

// Length is a waveform sample's valid frames.
func Length(out []byte) int { return int(binary.LittleEndian.Uint64(out)) }

// Row is channel c's samples in a waveform sample of frames frames: a
// float32 view of out (which must be 4-byte aligned: batch memory is).
func Row(out []byte, frames, c int) []float32 {
	at := c*(Header+4*frames) + Header
	if frames == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&out[at])), frames)
}

// SetLength stores a sample's valid frames in every row (channels rows).
func SetLength(out []byte, channels, frames, n int) {
	for c := 0; c < channels; c++ {
		binary.LittleEndian.PutUint64(out[c*(Header+4*frames):], uint64(n))
	}
}

type decoder struct {
	random   bool
	mono     bool
	frames   int // N: the slot's frames
	channels int // the clips' channels
	rate     int
}

func newDecoder(random bool) pipeline.Factory {
	return func(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
		var a struct {
			Seconds    float64 `json:"seconds"`
			MaxSeconds float64 `json:"max_seconds"`
			Mono       bool    `json:"mono"`
		}
		if err := pipeline.Parse(raw, &a); err != nil {
			return nil, err
		}
		secs := a.MaxSeconds
		if random {
			if a.MaxSeconds != 0 {
				return nil, fmt.Errorf("max_seconds is AudioDecoder's; a random crop takes seconds")
			}
			if !(a.Seconds > 0) || math.IsInf(a.Seconds, 0) {
				return nil, fmt.Errorf("seconds %g must be positive", a.Seconds)
			}
			secs = a.Seconds
		} else {
			if a.Seconds != 0 {
				return nil, fmt.Errorf("seconds is RandomAudioCropDecoder's; AudioDecoder takes max_seconds")
			}
			if a.MaxSeconds < 0 || math.IsNaN(a.MaxSeconds) || math.IsInf(a.MaxSeconds, 0) {
				return nil, fmt.Errorf("max_seconds %g must be positive (or None: whole clips)", a.MaxSeconds)
			}
		}
		if err := pipeline.NeedType(env, field.Audio); err != nil {
			if errors.Is(err, pipeline.ErrNoFile) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: an audio decoder reads an AudioField", err)
		}
		d := &decoder{random: random, mono: a.Mono}
		longest, err := d.scan(env)
		if err != nil {
			return nil, err
		}
		if secs > 0 {
			f := math.Round(secs * float64(d.rate))
			if f > 1<<31 {
				return nil, fmt.Errorf("%g s at %d Hz: too many frames", secs, d.rate)
			}
			d.frames = max(int(f), 1)
			if d.rate == 0 { // no samples
				d.frames = 0
			}
		} else {
			d.frames = int(longest)
		}
		if uint64(d.outChannels())*(Header+4*uint64(d.frames)) > 1<<31 {
			return nil, fmt.Errorf("%d frames of %d channels per sample: too large a slot", d.frames, d.outChannels())
		}
		return d, nil
	}
}

// scan checks in the file's metadata that every clip has one sample rate
// (the decoders' lengths are in seconds) and, unless mixed down to mono,
// one channel count; it returns the longest clip's frames.
func (d *decoder) scan(env pipeline.Env) (uint64, error) {
	var longest uint64
	for i := uint64(0); i < env.Reader.NumSamples(); i++ {
		col, err := env.Reader.Column(i, env.Field)
		if err != nil {
			return 0, err
		}
		m := field.ParseAudioMeta(col)
		if err := field.CheckAudio(m); err != nil {
			return 0, fmt.Errorf("sample %d: %w", i, err)
		}
		if i == 0 {
			d.rate, d.channels = m.SampleRate, m.Channels
		} else if m.SampleRate != d.rate {
			return 0, fmt.Errorf("clips of several sample rates (%d Hz, then %d Hz at sample %d): write them at one rate",
				d.rate, m.SampleRate, i)
		} else if m.Channels != d.channels && !d.mono {
			return 0, fmt.Errorf("clips of several channel counts (%d, then %d at sample %d): mix them down with mono=True",
				d.channels, m.Channels, i)
		}
		longest = max(longest, m.Frames)
	}
	if longest > 1<<31 {
		return 0, fmt.Errorf("a clip of %d frames: give max_seconds", longest)
	}
	return longest, nil
}

func (d *decoder) outChannels() int {
	if d.mono || d.channels == 0 {
		return 1
	}
	return d.channels
}

func (d *decoder) Out(pipeline.Spec) (pipeline.Spec, error) {
	return Spec(d.outChannels(), d.frames), nil
}

type scratch struct{ buf []float32 }

func (d *decoder) Run(c *pipeline.Ctx, key int, _, out []byte) error {
	m := field.ParseAudioMeta(c.Col)
	if err := field.CheckAudio(m); err != nil {
		return err
	}
	if m.SampleRate != d.rate || (!d.mono && m.Channels != d.channels) {
		return fmt.Errorf("%w: a clip of %d Hz, %d channels among clips of %d Hz, %d channels", field.ErrData,
			m.SampleRate, m.Channels, d.rate, d.channels)
	}
	N := d.frames
	start, n := uint64(0), uint64(N)
	if m.Frames <= n {
		n = m.Frames
	} else if d.random {
		start = c.Rand(key).Uint64N(m.Frames - n + 1)
	}
	oc := d.outChannels()
	clear(out)
	SetLength(out, oc, N, int(n))
	if n == 0 {
		return nil
	}
	aligned := uintptr(unsafe.Pointer(&out[0]))%4 == 0
	if aligned && (!d.mono || m.Channels == 1) {
		// Straight into the batch: channel rows are N + 2 floats apart.
		row := Row(out, N, 0)
		all := unsafe.Slice(&row[0], (oc-1)*(N+2)+N)
		return decodeErr(m, start, n, audio.Window(m.Codec, c.Heap, m.Channels, start, int(n), N+2, all))
	}
	sc := c.State("waveform", func() any { return new(scratch) }).(*scratch)
	if cap(sc.buf) < m.Channels*int(n) {
		sc.buf = make([]float32, m.Channels*int(n))
	}
	buf := sc.buf[:m.Channels*int(n)]
	if err := audio.Window(m.Codec, c.Heap, m.Channels, start, int(n), int(n), buf); err != nil {
		return decodeErr(m, start, n, err)
	}
	if d.mono && m.Channels > 1 {
		// The mean of the channels: their sum, in order, over their count.
		k := float32(m.Channels)
		for i := 0; i < int(n); i++ {
			s := buf[i]
			for ch := 1; ch < m.Channels; ch++ {
				s += buf[ch*int(n)+i]
			}
			buf[i] = s / k
		}
		buf = buf[:n]
	}
	for ch := 0; ch < oc; ch++ {
		at := ch*(Header+4*N) + Header
		for i, x := range buf[ch*int(n) : (ch+1)*int(n)] {
			binary.LittleEndian.PutUint32(out[at+4*i:], math.Float32bits(x))
		}
	}
	return nil
}

func decodeErr(m field.AudioMeta, start, n uint64, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s clip of %d frames, frames [%d, %d): %w", field.AudioCodecName(m.Codec), m.Frames, start, start+n, err)
}
