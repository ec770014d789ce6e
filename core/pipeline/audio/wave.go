// Package audio holds the operations on decoded waveforms and their
// spectrograms: mono mix-down, resampling, gain and speed perturbation on
// waveforms; torchaudio's MelSpectrogram and Whisper's log-mel from
// waveforms; SpecAugment's time and frequency masks on spectrograms.
// Their numeric kernels are core/audioproc's.
//
// # Valid length
//
// Every operation here reads and writes the rows layout of
// core/pipeline/waveform: rows of float32, each headed by the sample's
// valid length, zero past it. A waveform is (C, 8 + 4·N) (as the audio
// decoders give it), a spectrogram (n_mels, 8 + 4·T), or (C, n_mels,
// 8 + 4·T) of C > 1 channels. Each operation works on the valid part
// alone as if it were the whole sample (a spectrogram's reflect padding
// reflects at the true end, resampling reads zeros after it), writes
// zeros after its own valid part and stores that part's length in its
// output's rows: samples for waveforms, frames for spectrograms. So the
// length travels with the sample, from the decoder to the batch, whatever
// the workers. A plain float32 input (an NDArrayField's (N,) or (C, N)
// waveforms, (F, T) or (C, F, T) spectrograms) is taken as all valid.
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
	"github.com/ffcv-go/ffcv-go/core/pipeline/waveform"
)

// wave is an operation's input: rows of n float32 samples, laid out as
// the rows layout (framed: each row after its length header) or as a
// plain float32 array (all n valid).
type wave struct {
	rows, n int
	lead    []int // the shape of the rows (at least one axis)
	framed  bool
}

// needWave reads in as rows; dims are the numbers of axes before the
// samples' that in may have (waveforms: 1, spectrograms: 1 or 2 with
// the frequency axis); with vector, a plain float32 (N,) waveform is
// one row.
func needWave(in pipeline.Spec, what, plain string, vector bool, dims ...int) (wave, error) {
	var w wave
	var ok bool
	switch in.DType {
	case "|u1":
		w.lead, w.n, ok = waveform.Rows(in)
		w.framed = true
	case "<f4":
		if s := in.Shape; len(s) >= 1 && s[len(s)-1] >= 1 {
			w.lead, w.n, ok = s[:len(s)-1], s[len(s)-1], true
			if len(w.lead) == 0 && vector {
				w.lead = []int{1}
			}
			for _, d := range w.lead {
				ok = ok && d >= 1
			}
		}
	}
	if ok {
		ok = false
		for _, d := range dims {
			ok = ok || len(w.lead) == d
		}
	}
	if !ok {
		return wave{}, fmt.Errorf("needs %s: an audio decoder's or audio operation's rows %s uint8 (a length, "+
			"then float32 samples, per row), or float32 %s; got %v %s", what, rowsShape(dims), plain, in.Shape,
			field.DTypeName(in.DType))
	}
	w.rows = 1
	for _, d := range w.lead {
		w.rows *= d
	}
	return w, nil
}

func rowsShape(dims []int) string {
	if len(dims) == 1 && dims[0] == 1 {
		return "(C, 8 + 4·N)"
	}
	return "(F, 8 + 4·T) or (C, F, 8 + 4·T)"
}

// stride is the bytes from one row's samples to the next's.
func (w wave) stride() int {
	if w.framed {
		return waveform.Header + 4*w.n
	}
	return 4 * w.n
}

// row is row r's n samples of in (checked aligned by check).
func (w wave) row(in []byte, r int) []float32 {
	at := r * w.stride()
	if w.framed {
		at += waveform.Header
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&in[at])), w.n)
}

// valid is the sample's valid samples: its rows' length, or all of them.
func (w wave) valid(in []byte) (int, error) {
	if !w.framed {
		return w.n, nil
	}
	v := waveform.Length(in)
	if v > w.n {
		return 0, fmt.Errorf("%w: a valid length of %d in rows of %d samples", field.ErrData, v, w.n)
	}
	return v, nil
}

// rows is the float32 rows layout of out: rows of m samples.
type rows struct{ n, m int }

func (o rows) row(out []byte, r int) []float32 { return waveform.Row(out, o.m, r) }

// finish stores the valid length in every row and zeros the samples past
// it.
func (o rows) finish(out []byte, valid int) {
	waveform.SetLength(out, o.n, o.m, valid)
	for r := 0; r < o.n; r++ {
		clear(o.row(out, r)[valid:])
	}
}

// aligned checks that in and out (a sample's slots and the scratch
// buffers are 4-byte aligned) can be viewed as float32 without a copy on
// the little-endian hosts the library is built for.
func aligned(bufs ...[]byte) error {
	for _, b := range bufs {
		if len(b) > 0 && (!nativeLE || uintptr(unsafe.Pointer(&b[0]))%4 != 0) {
			return fmt.Errorf("float32 buffer at %p not aligned to 4 bytes on a little-endian host", &b[0])
		}
	}
	return nil
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
	pipeline.Register("audio_add_noise", newAddNoise)
	pipeline.Register("mel_spectrogram", newMel)
	pipeline.Register("whisper_log_mel", newWhisper)
	pipeline.Register("time_masking", newTimeMask)
	pipeline.Register("frequency_masking", newFreqMask)
}

// mono averages the channels of (C, N) into (1, N): torch's
// waveform.mean(0, keepdim=True).
type mono struct{ w wave }

func newMono(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	if err := pipeline.Parse(raw, &struct{}{}); err != nil {
		return nil, err
	}
	return &mono{}, nil
}

const wavePlain = "(N,) or (C, N)"

func (o *mono) Out(in pipeline.Spec) (pipeline.Spec, error) {
	w, err := needWave(in, "waveforms", wavePlain, true, 1)
	o.w = w
	return waveform.SpecOf([]int{1}, w.n), err
}

func (o *mono) InPlace() bool { return o.w.rows == 1 && o.w.framed }

func (o *mono) Run(_ *pipeline.Ctx, _ int, in, out []byte) error {
	if err := aligned(in, out); err != nil {
		return err
	}
	valid, err := o.w.valid(in)
	if err != nil {
		return err
	}
	dst := rows{1, o.w.n}
	y := dst.row(out, 0)
	if o.w.rows == 1 {
		copy(y[:valid], o.w.row(in, 0)) // copy handles in and out the same
	} else {
		inv := 1 / float64(o.w.rows)
		for i := 0; i < valid; i++ {
			var s float64
			for r := 0; r < o.w.rows; r++ {
				s += float64(o.w.row(in, r)[i])
			}
			y[i] = float32(s * inv)
		}
	}
	dst.finish(out, valid)
	return nil
}

// gain scales the waveform by a gain drawn uniformly in [min_db, max_db]
// dB: torchaudio.functional.gain, x·10^(g/20).
type gain struct {
	lo, hi float64
	w      wave
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
	w, err := needWave(in, "waveforms", wavePlain, true, 1)
	g.w = w
	return waveform.SpecOf(w.lead, w.n), err
}

func (g *gain) InPlace() bool { return g.w.framed }

// Gain is the gain in dB the op draws for the sample in c under key.
func (g *gain) Gain(c *pipeline.Ctx, key int) float64 {
	return g.lo + (g.hi-g.lo)*c.Rand(key).Float64()
}

func (g *gain) Run(c *pipeline.Ctx, key int, in, out []byte) error {
	k := float32(math.Pow(10, g.Gain(c, key)/20))
	if err := aligned(in, out); err != nil {
		return err
	}
	valid, err := g.w.valid(in)
	if err != nil {
		return err
	}
	dst := rows{g.w.rows, g.w.n}
	for r := 0; r < g.w.rows; r++ {
		y := dst.row(out, r)
		for i, v := range g.w.row(in, r)[:valid] {
			y[i] = v * k
		}
	}
	dst.finish(out, valid)
	return nil
}
