// Package audioenc is the writer's side of AudioField: it turns a value --
// an audio file (by path or its bytes) or an array of samples -- into the
// stored clip: FLAC (libFLAC, the default) or the file's own bytes, with
// the metadata column (sample rate, channels, frames, codec). Every value
// is decoded whole once, so a file that is corrupt, truncated (its frames
// short of its header's count), empty, of an unknown codec or of sample
// rate 0 is refused here, naming the file, and never stored.
package audioenc

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"

	"github.com/ffcv-go/ffcv-go/core/audio"
	"github.com/ffcv-go/ffcv-go/core/audioproc"
	"github.com/ffcv-go/ffcv-go/core/field"
)

// Options are AudioField's write options.
type Options struct {
	// Storage: "flac" (default) or "source" (files as they are, arrays as WAV).
	Storage string `json:"storage"`
	// Bits: the integer width float sources (float WAV, MP3, Opus, float
	// arrays) are stored at in FLAC, 16 (default) or 24. Integer sources
	// keep their own width (8 to 24 bits).
	Bits int `json:"bits"`
	// Resample, when not 0, resamples every clip of another rate to this
	// one (Hz) at write time, as torchaudio.functional.resample does by
	// default; the result is stored as floats (FLAC at Bits bits, or
	// float WAV with storage "source").
	Resample int `json:"resample"`
}

// Sample formats of an array value (field.Value.Width).
const (
	Int16   = 1
	Int32   = 2
	Float32 = 3
)

// Check fills in defaults and checks o.
func (o *Options) Check() error {
	if o.Storage == "" {
		o.Storage = "flac"
	}
	if o.Bits == 0 {
		o.Bits = 16
	}
	switch {
	case o.Storage != "flac" && o.Storage != "source":
		return fmt.Errorf("storage %q (want flac or source)", o.Storage)
	case o.Bits != 16 && o.Bits != 24:
		return fmt.Errorf("bits %d (want 16 or 24)", o.Bits)
	case o.Resample < 0 || o.Resample > math.MaxInt32:
		return fmt.Errorf("resample %d must be a positive rate (Hz)", o.Resample)
	}
	return nil
}

// NewEncoder returns the encoder of an Audio field.
func NewEncoder(d field.Desc, o Options) (field.Encoder, error) {
	if d.Type != field.Audio {
		return nil, fmt.Errorf("field %q: a %v is not an audio field", d.Name, d.Type)
	}
	if d.Audio != nil && d.Audio.Storage != "" {
		o.Storage = d.Audio.Storage
	}
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("AudioField: %w", err)
	}
	return encoder{o}, nil
}

type encoder struct{ o Options }

// Encode takes a value in one of these forms:
//   - Column set (field.AudioColumnSize bytes): a clip Encode made already
//     (the Python writer encodes in its own threads, to report a bad file
//     by its item), Data its stored bytes;
//   - Path: an audio file, read here;
//   - Encoded: Data is an audio file's bytes;
//   - else an array: Data the samples of a (channels, frames) C-order
//     array, Channels, Int the sample rate, Width the sample format
//     (Int16, Int32, Float32).
func (e encoder) Encode(v field.Value, _ uint64) (field.Encoded, error) {
	if len(v.Column) > 0 {
		if len(v.Column) != field.AudioColumnSize {
			return field.Encoded{}, dataErr("an audio column of %d bytes", len(v.Column))
		}
		m := field.ParseAudioMeta(v.Column)
		if err := field.CheckAudio(m); err != nil {
			return field.Encoded{}, err
		}
		m.Size = uint64(len(v.Data))
		return field.Encoded{Column: m.Column(), Heap: v.Data, HasHeap: true}, nil
	}
	heap, m, err := Encode(v, e.o)
	if err != nil {
		return field.Encoded{}, err
	}
	return field.Encoded{Column: m.Column(), Heap: heap, HasHeap: true}, nil
}

// Encode makes the stored clip of a value (see encoder.Encode for its
// forms) and its metadata; errors name the file.
func Encode(v field.Value, o Options) ([]byte, field.AudioMeta, error) {
	if err := o.Check(); err != nil {
		return nil, field.AudioMeta{}, fmt.Errorf("AudioField: %w", err)
	}
	where := "the audio given as bytes"
	var data []byte
	switch {
	case v.Path != "":
		where = v.Path
		var err error
		if data, err = os.ReadFile(v.Path); err != nil {
			return nil, field.AudioMeta{}, dataErr("%v", err)
		}
	case v.Encoded:
		data = v.Data
	default:
		where = "the audio array"
	}
	heap, m, err := encode(v, data, o)
	if err != nil {
		return nil, field.AudioMeta{}, fmt.Errorf("%s: %w", where, err)
	}
	return heap, m, nil
}

func encode(v field.Value, data []byte, o Options) ([]byte, field.AudioMeta, error) {
	var pcm audio.PCM
	var err error
	if v.Path != "" || v.Encoded {
		if pcm, err = audio.DecodeAll(data); err != nil {
			return nil, field.AudioMeta{}, err
		}
	} else if pcm, err = fromArray(v); err != nil {
		return nil, field.AudioMeta{}, err
	}
	if o.Resample > 0 && o.Resample != pcm.SampleRate {
		y, err := resample(pcm.Floats(), pcm.Channels, pcm.SampleRate, o.Resample)
		if err != nil {
			return nil, field.AudioMeta{}, fmt.Errorf("resampling from %d Hz to %d Hz: %w", pcm.SampleRate, o.Resample, err)
		}
		pcm = audio.PCM{Info: audio.Info{Codec: pcm.Codec, SampleRate: o.Resample, Channels: pcm.Channels, Bits: 32,
			Frames: uint64(len(y) / pcm.Channels)}, Float: y}
		data = nil // the source's bytes are not the clip any more
		if pcm.Frames == 0 {
			return nil, field.AudioMeta{}, dataErr("resampling left no frames")
		}
	}
	m := field.AudioMeta{Frames: pcm.Frames, SampleRate: pcm.SampleRate, Channels: pcm.Channels}
	var heap []byte
	switch {
	case o.Storage == "source" && data != nil:
		heap, m.Codec, m.Bits = data, pcm.Codec, pcm.Bits
		if pcm.Codec == field.AudioMP3 || pcm.Codec == field.AudioOpus {
			m.Bits = 0
		}
	case o.Storage == "source": // an array, or a resampled clip: as WAV
		m.Codec = field.AudioWAV
		switch {
		case pcm.Float != nil:
			heap, m.Bits = audio.WAV(nil, pcm.Float, pcm.Channels, 32, pcm.SampleRate), 32
		case pcm.Bits == 16:
			heap, m.Bits = audio.WAV(pcm.Int, nil, pcm.Channels, 16, pcm.SampleRate), 16
		default:
			heap, m.Bits = audio.WAV(pcm.Int, nil, pcm.Channels, 32, pcm.SampleRate), 32
		}
	default:
		ints, bits := pcm.Int, pcm.Bits
		if ints == nil || bits > 24 {
			ints, bits = audio.Quantize(pcm.Floats(), o.Bits), o.Bits
		}
		if heap, err = audio.EncodeFLAC(ints, pcm.Channels, bits, pcm.SampleRate); err != nil {
			return nil, field.AudioMeta{}, err
		}
		m.Codec, m.Bits = field.AudioFLAC, bits
	}
	m.Size = uint64(len(heap))
	if err := field.CheckAudio(m); err != nil {
		return nil, field.AudioMeta{}, err
	}
	return heap, m, nil
}

// resamplers holds a Resampler per (from, to) rates, the first
// maxResamplers pairs met: a kernel costs about as much to build as a clip
// does to resample, and a dataset's clips share a few rates. Resamplers are
// safe for concurrent use.
var (
	resamplers  sync.Map // [2]int -> *audioproc.Resampler
	nResamplers atomic.Int32
)

const maxResamplers = 16

// resample converts a planar clip (channels × frames) from one rate to
// another with torchaudio's defaults (sinc_interp_hann, lowpass width 6,
// rolloff 0.99), each channel on its own.
func resample(x []float32, channels, from, to int) ([]float32, error) {
	var r *audioproc.Resampler
	if v, ok := resamplers.Load([2]int{from, to}); ok {
		r = v.(*audioproc.Resampler)
	} else {
		var err error
		if r, err = audioproc.NewResampler(from, to, 6, 0.99); err != nil {
			return nil, err
		}
		if nResamplers.Add(1) <= maxResamplers {
			resamplers.Store([2]int{from, to}, r)
		}
	}
	frames := len(x) / channels
	n := r.OutLen(frames)
	y := make([]float32, n*channels)
	for c := 0; c < channels; c++ {
		r.Apply(x[c*frames:(c+1)*frames], y[c*n:(c+1)*n])
	}
	return y, nil
}

func dataErr(format string, args ...any) error {
	return &audio.DataError{Msg: fmt.Sprintf(format, args...)}
}

// fromArray reads an array value as a PCM clip.
func fromArray(v field.Value) (audio.PCM, error) {
	size := map[int]int{Int16: 2, Int32: 4, Float32: 4}[v.Width]
	switch {
	case size == 0:
		return audio.PCM{}, dataErr("sample format %d (int16, int32 or float32)", v.Width)
	case v.Int <= 0 || v.Int > math.MaxInt32:
		return audio.PCM{}, dataErr("sample rate %d", v.Int)
	case v.Channels < 1 || v.Channels > field.MaxAudioChannels:
		return audio.PCM{}, dataErr("%d channels (1 to %d)", v.Channels, field.MaxAudioChannels)
	case len(v.Data) == 0:
		return audio.PCM{}, dataErr("no samples (0 frames)")
	case len(v.Data)%(size*v.Channels) != 0:
		return audio.PCM{}, dataErr("%d bytes are not whole frames of %d channels", len(v.Data), v.Channels)
	}
	n := len(v.Data) / size
	p := audio.PCM{Info: audio.Info{Codec: field.AudioWAV, SampleRate: int(v.Int), Channels: v.Channels,
		Frames: uint64(n / v.Channels)}}
	switch v.Width {
	case Int16:
		p.Bits, p.Int = 16, make([]int32, n)
		for i := range p.Int {
			p.Int[i] = int32(int16(binary.LittleEndian.Uint16(v.Data[2*i:])))
		}
	case Int32:
		p.Bits, p.Int = 32, make([]int32, n)
		for i := range p.Int {
			p.Int[i] = int32(binary.LittleEndian.Uint32(v.Data[4*i:]))
		}
	default:
		p.Bits, p.Float = 32, make([]float32, n)
		for i := range p.Float {
			x := math.Float32frombits(binary.LittleEndian.Uint32(v.Data[4*i:]))
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return audio.PCM{}, dataErr("sample %d of channel %d is %g", i%int(p.Frames), i/int(p.Frames), x)
			}
			p.Float[i] = x
		}
	}
	return p, nil
}
