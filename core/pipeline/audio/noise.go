package audio

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ffcv-go/ffcv-go/core/audio"
	"github.com/ffcv-go/ffcv-go/core/audioproc"
	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/waveform"
)

// addNoise adds a clip of an AudioField (the noise) to the waveform at an
// SNR drawn uniformly in [lo, hi] dB, by torchaudio.functional.add_noise's
// rule on the valid samples of each channel (audioproc.AddNoise). The noise
// field is one of the file being read, or, with source, one of that source
// of the mixture being read (a side source of weight 0, such as a noise
// corpus, or one its epochs take), whose samples alone are drawn. The
// noise clip and a window of it as long as the sample's valid part are
// drawn from the op's key, as the multi-sample image operations draw their
// partners; a noise clip shorter than the sample is repeated. A noise of
// the sample's channel count is added channel to channel; one of another
// count is mixed down to mono and added to every channel.
type addNoise struct {
	lo, hi      float64
	name        string
	r           *beton.Reader
	f           int
	start, size uint64 // the noise samples: [start, start+size) of r
	w           wave
}

func newAddNoise(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		SNR    []float64 `json:"snr_db"`
		Noise  string    `json:"noise"`
		Source any       `json:"source"` // a source's name or index, or nil
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if len(a.SNR) != 2 {
		return nil, fmt.Errorf("snr_db %v: give (low, high) in dB", a.SNR)
	}
	for _, v := range a.SNR {
		if err := checkFinite("snr_db", v); err != nil {
			return nil, err
		}
	}
	if a.SNR[0] > a.SNR[1] || a.SNR[0] < -100 || a.SNR[1] > 200 {
		return nil, fmt.Errorf("snr_db %v: low <= high, within [-100, 200] dB", a.SNR)
	}
	if a.Noise == "" {
		return nil, fmt.Errorf("noise: name the AudioField the noise clips are drawn from")
	}
	switch v := a.Source.(type) {
	case nil, string:
	case float64:
		if v < 0 || v != math.Trunc(v) || v > 1<<20 {
			return nil, fmt.Errorf("source %v: give a source of the Mixture by its name or index", v)
		}
	default:
		return nil, fmt.Errorf("source %v: give a source of the Mixture by its name or index", v)
	}
	o := &addNoise{lo: a.SNR[0], hi: a.SNR[1], name: a.Noise}
	if err := pipeline.NeedType(env, field.Audio, field.NDArray); err != nil {
		if errors.Is(err, pipeline.ErrNoFile) {
			return o, nil // checking the arguments alone
		}
		return nil, fmt.Errorf("%w: noise is added to the waveforms of an AudioField or an NDArrayField", err)
	}
	src, where := pipeline.Source{Reader: env.Reader, Size: env.Reader.NumSamples()}, env.Reader.Path
	if a.Source != nil {
		var err error
		if src, err = noiseSource(env, a.Source); err != nil {
			return nil, err
		}
		where = fmt.Sprintf("source %q", src.Name)
	}
	o.r, o.start, o.size, o.f = src.Reader, src.Start, src.Size, src.Reader.FieldIndex(a.Noise)
	if o.f < 0 || o.r.Fields[o.f].Type != field.Audio {
		return nil, fmt.Errorf("noise %q is not an AudioField of %s (its fields: %s)", a.Noise, where, fieldNames(o.r))
	}
	if o.size == 0 {
		return nil, fmt.Errorf("%s has no samples to draw noise from", where)
	}
	// The noise must be at the rate of the clips it is added to: the
	// pipeline's own field's, where that is an AudioField (put AddNoise
	// before a Resample).
	rate, err := oneRate(o.r, o.f, o.start, o.size)
	if err != nil {
		return nil, fmt.Errorf("noise %q of %s: %w", a.Noise, where, err)
	}
	if env.Desc.Type == field.Audio && (env.Field != o.f || o.r != env.Reader) {
		own, err := oneRate(env.Reader, env.Field, 0, env.Reader.NumSamples())
		if err == nil && own != rate {
			return nil, fmt.Errorf("noise %q of %s at %d Hz, the clips at %d Hz: write the noise at their rate",
				a.Noise, where, rate, own)
		}
	}
	return o, nil
}

// noiseSource is the source of env's mixture that which (a name or an
// index) names.
func noiseSource(env pipeline.Env, which any) (pipeline.Source, error) {
	if env.Sources == nil {
		return pipeline.Source{}, fmt.Errorf("source %v: the loader reads one dataset (%s), not a Mixture: "+
			"leave source out to draw the noise from it", fmtSource(which), env.Reader.Path)
	}
	names := make([]string, len(env.Sources))
	for k, s := range env.Sources {
		names[k] = fmt.Sprintf("%d: %q", k, s.Name)
	}
	list := strings.Join(names, ", ")
	if k, ok := which.(float64); ok {
		if int(k) >= len(env.Sources) {
			return pipeline.Source{}, fmt.Errorf("source %d: the Mixture has %d sources (%s)", int(k), len(env.Sources), list)
		}
		return env.Sources[int(k)], nil
	}
	found := -1
	for k, s := range env.Sources {
		if s.Name != which {
			continue
		}
		if found >= 0 {
			return pipeline.Source{}, fmt.Errorf("source %q names sources %d and %d of the Mixture: give them "+
				"distinct names (Source(name=)) or name the source by its index", which, found, k)
		}
		found = k
	}
	if found < 0 {
		return pipeline.Source{}, fmt.Errorf("source %q is not a source of the Mixture (its sources: %s)", which, list)
	}
	return env.Sources[found], nil
}

func fmtSource(which any) string {
	if s, ok := which.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(which)
}

func fieldNames(r *beton.Reader) string {
	names := make([]string, len(r.Fields))
	for i, d := range r.Fields {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

// oneRate is the sample rate of every clip of AudioField f among samples
// [start, start+n) of r.
func oneRate(r *beton.Reader, f int, start, n uint64) (int, error) {
	rate := 0
	for i := start; i < start+n; i++ {
		col, err := r.Column(i, f)
		if err != nil {
			return 0, err
		}
		m := field.ParseAudioMeta(col)
		if err := field.CheckAudio(m); err != nil {
			return 0, fmt.Errorf("sample %d: %w", i-start, err)
		}
		if i > start && m.SampleRate != rate {
			return 0, fmt.Errorf("clips of several sample rates (%d Hz, then %d Hz at sample %d)", rate, m.SampleRate, i-start)
		}
		rate = m.SampleRate
	}
	return rate, nil
}

func (o *addNoise) Out(in pipeline.Spec) (pipeline.Spec, error) {
	w, err := needWave(in, "waveforms", wavePlain, true, 1)
	o.w = w
	return waveform.SpecOf(w.lead, w.n), err
}

func (o *addNoise) InPlace() bool { return o.w.framed }

// Draw is what the op draws for the sample in c under key, in this
// order: the noise sample, the SNR in dB, and (the noise clip being
// frames long) the start of its window of valid samples.
func (o *addNoise) Draw(c *pipeline.Ctx, key int) (sample uint64, snr float64, start func(frames uint64, valid int) uint64) {
	r := c.Rand(key)
	sample = o.start + r.Uint64N(o.size)
	snr = o.lo + (o.hi-o.lo)*r.Float64()
	return sample, snr, func(frames uint64, valid int) uint64 {
		if frames <= uint64(valid) {
			return 0
		}
		return r.Uint64N(frames - uint64(valid) + 1)
	}
}

type noiseScratch struct{ buf, mix []float32 }

func (o *addNoise) Run(c *pipeline.Ctx, key int, in, out []byte) error {
	if o.r == nil {
		return fmt.Errorf("AddNoise built without its file")
	}
	if err := aligned(in, out); err != nil {
		return err
	}
	valid, err := o.w.valid(in)
	if err != nil {
		return err
	}
	dst := rows{o.w.rows, o.w.n}
	for r := 0; r < o.w.rows; r++ {
		copy(dst.row(out, r), o.w.row(in, r)) // copy handles in and out the same
	}
	dst.finish(out, valid)
	if valid == 0 {
		return nil
	}
	k, snr, window := o.Draw(c, key)
	col, heap, err := o.r.Read(k, o.f)
	if err != nil {
		return fmt.Errorf("noise sample %d: %w", k, err)
	}
	m := field.ParseAudioMeta(col)
	if err := field.CheckAudio(m); err != nil {
		return fmt.Errorf("noise sample %d: %w", k, err)
	}
	start := window(m.Frames, valid)
	n := int(min(m.Frames, uint64(valid)))
	sc := c.State("audio.noise", func() any { return &noiseScratch{} }).(*noiseScratch)
	sc.buf = growF32(sc.buf, m.Channels*n)
	if err := audio.Window(m.Codec, heap, m.Channels, start, n, n, sc.buf); err != nil {
		return fmt.Errorf("noise sample %d (%s), frames [%d, %d): %w", k, field.AudioCodecName(m.Codec), start,
			start+uint64(n), err)
	}
	sc.mix = growF32(sc.mix, valid)
	for r := 0; r < o.w.rows; r++ {
		if r == 0 || m.Channels == o.w.rows {
			for i := range sc.mix {
				if m.Channels == o.w.rows {
					sc.mix[i] = sc.buf[r*n+i%n]
					continue
				}
				var s float32
				for ch := 0; ch < m.Channels; ch++ {
					s += sc.buf[ch*n+i%n]
				}
				sc.mix[i] = s / float32(m.Channels)
			}
		}
		audioproc.AddNoise(dst.row(out, r), sc.mix, valid, snr)
	}
	return nil
}

func growF32(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}
