// Package audio holds the operations on decoded waveforms and their
// spectrograms: mono mix-down, resampling, gain and speed perturbation on
// float32 waveforms, (N,) or (C, N); torchaudio's MelSpectrogram and
// Whisper's log-mel from waveforms; SpecAugment's time and frequency
// masks on spectrograms, (F, T) or (C, F, T). Their numeric kernels are
// core/audioproc's.
//
// # Valid length
//
// A sample's waveform is padded to its slot: its decoder records how
// many samples along the last axis are the sample's own with SetLength,
// and each operation here reads it (Length), works on that part alone (a
// spectrogram's reflect padding reflects at the true end, resampling
// reads zeros after it), writes zeros after its own valid part and
// records that part's length for the next operation: samples for
// waveforms, frames for spectrograms. Without a recorded length the
// whole last axis is the sample's.
package audio

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// length is the valid length recorded for one sample: the sample it
// belongs to (a worker's Ctx moves on to other samples), and the length
// of the last axis it was recorded for (a later program of the same
// sample decoding another field does not inherit it).
type length struct {
	seed, epoch, pos, sample uint64
	full, n                  int
}

const lengthState = "audio.length"

// SetLength records that the first n of the full samples (or frames)
// along the last axis of the current stage's output are the sample's own.
func SetLength(c *pipeline.Ctx, n, full int) {
	l := c.State(lengthState, func() any { return &length{} }).(*length)
	*l = length{seed: c.Seed, epoch: c.Epoch, pos: c.Pos, sample: c.Sample, full: full, n: min(max(n, 0), full)}
}

// Length is the valid length of the current stage's last axis, full
// long: what SetLength recorded for this sample and this length, else
// full.
func Length(c *pipeline.Ctx, full int) int {
	l := c.State(lengthState, func() any { return &length{} }).(*length)
	if l.seed == c.Seed && l.epoch == c.Epoch && l.pos == c.Pos && l.sample == c.Sample && l.full == full {
		return l.n
	}
	return full
}

// wave is a float32 input of shape (N,) or (C, N): rows of n samples.
type wave struct {
	rows, n int
	lead    []int // the shape before the last axis
}

func needWave(in pipeline.Spec, what string) (wave, error) {
	if in.DType != "<f4" || len(in.Shape) < 1 || len(in.Shape) > 2 || in.Shape[len(in.Shape)-1] < 1 {
		return wave{}, fmt.Errorf("needs float32 %s of shape (N,) or (C, N), got %v %s", what, in.Shape, field.DTypeName(in.DType))
	}
	w := wave{rows: 1, n: in.Shape[len(in.Shape)-1], lead: in.Shape[:len(in.Shape)-1]}
	if len(in.Shape) == 2 {
		w.rows = in.Shape[0]
	}
	return w, nil
}

// spec is the float32 shape lead + tail.
func spec(lead []int, tail ...int) pipeline.Spec {
	return pipeline.Spec{Shape: append(append([]int(nil), lead...), tail...), DType: "<f4"}
}

// views views the little-endian float32 buffers in and out (a sample's
// slots and the scratch buffers are 4-byte aligned) as floats, without a
// copy on the little-endian hosts the library is built for.
func views(in, out []byte) (x, y []float32, err error) {
	if x, err = f32(in); err == nil {
		y, err = f32(out)
	}
	return x, y, err
}

func f32(b []byte) ([]float32, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if !nativeLE || uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		return nil, fmt.Errorf("float32 buffer at %p not aligned to 4 bytes on a little-endian host", &b[0])
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4), nil
}

var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// scratchName gives each operation built its own name for per-worker
// state (its FFT plans and buffers).
var scratchIDs atomic.Int64

func scratchName(kind string) string {
	return fmt.Sprintf("audio.%s.%d", kind, scratchIDs.Add(1))
}

func checkFinite(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s %v must be finite", name, v)
	}
	return nil
}

func init() {
	pipeline.Register("audio_mono", newMono)
	pipeline.Register("audio_resample", newResample)
	pipeline.Register("audio_gain", newGain)
	pipeline.Register("audio_speed", newSpeed)
	pipeline.Register("mel_spectrogram", newMel)
	pipeline.Register("whisper_log_mel", newWhisper)
	pipeline.Register("time_masking", newTimeMask)
	pipeline.Register("frequency_masking", newFreqMask)
}

// mono averages the channels of (C, N) into (1, N), or into (N,)
// without keepdim: torch's waveform.mean(0, keepdim). (N,) passes as it
// is.
type mono struct {
	keep bool
	w    wave
}

func newMono(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	a := struct {
		Keepdim *bool `json:"keepdim"`
	}{}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	return &mono{keep: a.Keepdim == nil || *a.Keepdim}, nil
}

func (o *mono) Out(in pipeline.Spec) (pipeline.Spec, error) {
	w, err := needWave(in, "waveforms")
	if err != nil {
		return in, err
	}
	o.w = w
	if o.keep && len(in.Shape) == 2 {
		return spec(nil, 1, w.n), nil
	}
	return spec(nil, w.n), nil // (N,) is mono already
}

func (o *mono) InPlace() bool { return o.w.rows == 1 }

func (o *mono) Run(c *pipeline.Ctx, _ int, in, out []byte) error {
	x, y, err := views(in, out)
	if err != nil {
		return err
	}
	n, valid := o.w.n, Length(c, o.w.n)
	if o.w.rows == 1 {
		pipeline.CopyIfNeeded(out, in)
	} else {
		inv := 1 / float64(o.w.rows)
		for i := 0; i < valid; i++ {
			var s float64
			for r := 0; r < o.w.rows; r++ {
				s += float64(x[r*n+i])
			}
			y[i] = float32(s * inv)
		}
	}
	clear(y[valid:n])
	return nil
}

// gain scales the waveform by a gain drawn uniformly in [min_db, max_db]
// dB: torchaudio.functional.gain, x·10^(g/20).
type gain struct {
	lo, hi float64
	n      int // samples per row
}

func newGain(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		MinDB float64 `json:"min_db"`
		MaxDB float64 `json:"max_db"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if err := checkFinite("min_db", a.MinDB); err != nil {
		return nil, err
	}
	if err := checkFinite("max_db", a.MaxDB); err != nil {
		return nil, err
	}
	if a.MinDB > a.MaxDB || a.MaxDB > 200 || a.MinDB < -200 {
		return nil, fmt.Errorf("min_db %v and max_db %v must satisfy -200 <= min_db <= max_db <= 200", a.MinDB, a.MaxDB)
	}
	return &gain{lo: a.MinDB, hi: a.MaxDB}, nil
}

func (g *gain) Out(in pipeline.Spec) (pipeline.Spec, error) {
	w, err := needWave(in, "waveforms")
	g.n = w.n
	return in, err
}

func (*gain) InPlace() bool { return true }

// Gain is the gain in dB the op draws for the sample in c under key.
func (g *gain) Gain(c *pipeline.Ctx, key int) float64 {
	return g.lo + (g.hi-g.lo)*c.Rand(key).Float64()
}

func (g *gain) Run(c *pipeline.Ctx, key int, in, out []byte) error {
	k := float32(math.Pow(10, g.Gain(c, key)/20))
	x, y, err := views(in, out)
	if err != nil {
		return err
	}
	n := g.n
	valid := Length(c, n)
	for r := 0; r < len(x)/n; r++ {
		for i, v := range x[r*n : r*n+valid] {
			y[r*n+i] = v * k
		}
		clear(y[r*n+valid : (r+1)*n])
	}
	return nil
}
