package audio

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/audio"
	"github.com/ffcv-go/ffcv-go/core/audioproc"
	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/waveform"
)

// addNoise adds a clip of another AudioField of the file (the noise) to
// the waveform at an SNR drawn uniformly in [lo, hi] dB, by
// torchaudio.functional.add_noise's rule on the valid samples of each
// channel (audioproc.AddNoise). The noise clip and a window of it as long
// as the sample's valid part are drawn from the op's key, as the
// multi-sample image operations draw their partners; a noise clip shorter
// than the sample is repeated. A noise of the sample's channel count is
// added channel to channel; one of another count is mixed down to mono
// and added to every channel.
type addNoise struct {
	lo, hi float64
	name   string
	r      *beton.Reader
	f      int
	w      wave
}

func newAddNoise(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		SNR   []float64 `json:"snr_db"`
		Noise string    `json:"noise"`
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
		return nil, fmt.Errorf("noise: name the AudioField of the file the noise clips are drawn from")
	}
	o := &addNoise{lo: a.SNR[0], hi: a.SNR[1], name: a.Noise}
	if err := pipeline.NeedType(env, field.Audio, field.NDArray); err != nil {
		if errors.Is(err, pipeline.ErrNoFile) {
			return o, nil // checking the arguments alone
		}
		return nil, fmt.Errorf("%w: noise is added to the waveforms of an AudioField or an NDArrayField", err)
	}
	o.r, o.f = env.Reader, env.Reader.FieldIndex(a.Noise)
	if o.f < 0 || env.Reader.Fields[o.f].Type != field.Audio {
		return nil, fmt.Errorf("noise %q is not an AudioField of %s", a.Noise, env.Reader.Path)
	}
	if env.Reader.NumSamples() == 0 {
		return nil, fmt.Errorf("the file has no samples to draw noise from")
	}
	// The noise must be at the rate of the clips it is added to: the
	// pipeline's own field's, where that is an AudioField (put AddNoise
	// before a Resample).
	rate, err := oneRate(env.Reader, o.f)
	if err != nil {
		return nil, fmt.Errorf("noise %q: %w", a.Noise, err)
	}
	if env.Desc.Type == field.Audio && env.Field != o.f {
		own, err := oneRate(env.Reader, env.Field)
		if err == nil && own != rate {
			return nil, fmt.Errorf("noise %q at %d Hz, the clips at %d Hz: write the noise at their rate", a.Noise,
				rate, own)
		}
	}
	return o, nil
}

// oneRate is the sample rate of every clip of AudioField f.
func oneRate(r *beton.Reader, f int) (int, error) {
	rate := 0
	for i := uint64(0); i < r.NumSamples(); i++ {
		col, err := r.Column(i, f)
		if err != nil {
			return 0, err
		}
		m := field.ParseAudioMeta(col)
		if err := field.CheckAudio(m); err != nil {
			return 0, fmt.Errorf("sample %d: %w", i, err)
		}
		if i > 0 && m.SampleRate != rate {
			return 0, fmt.Errorf("clips of several sample rates (%d Hz, then %d Hz at sample %d)", rate, m.SampleRate, i)
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
	sample = r.Uint64N(o.r.NumSamples())
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
