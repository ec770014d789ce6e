package audio

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/audioproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/waveform"
)

// resample is torchaudio.functional.resample with sinc_interp_hann:
// (..., N) to (..., ceil(new·N/orig)).
type resample struct {
	r *audioproc.Resampler
	w wave
}

func newResample(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	a := struct {
		Orig    int      `json:"orig_freq"`
		New     int      `json:"new_freq"`
		Width   *int     `json:"lowpass_filter_width"`
		Rolloff *float64 `json:"rolloff"`
	}{}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	width, rolloff := 6, 0.99
	if a.Width != nil {
		width = *a.Width
	}
	if a.Rolloff != nil {
		rolloff = *a.Rolloff
	}
	r, err := audioproc.NewResampler(a.Orig, a.New, width, rolloff)
	if err != nil {
		return nil, err
	}
	return &resample{r: r}, nil
}

func (o *resample) Out(in pipeline.Spec) (pipeline.Spec, error) {
	w, err := needWave(in, "waveforms", wavePlain, true, 1)
	if err != nil {
		return in, err
	}
	o.w = w
	return waveform.SpecOf(w.lead, o.r.OutLen(w.n)), nil
}

func (o *resample) Run(_ *pipeline.Ctx, _ int, in, out []byte) error {
	return resampleRows(o.r, o.w, in, out, o.r.OutLen(o.w.n))
}

// resampleRows resamples each row's valid part (the zeros after it are
// what torchaudio's own padding reads) into rows of m samples, zero after
// their valid part, headed by that length.
func resampleRows(r *audioproc.Resampler, w wave, in, out []byte, m int) error {
	if err := aligned(in, out); err != nil {
		return err
	}
	valid, err := w.valid(in)
	if err != nil {
		return err
	}
	dst := rows{w.rows, m}
	got := min(r.OutLen(valid), m)
	for row := 0; row < w.rows; row++ {
		y := dst.row(out, row)
		r.Apply(w.row(in, row)[:valid], y[:got])
	}
	dst.finish(out, got)
	return nil
}

// speed is torchaudio's SpeedPerturbation: a factor drawn uniformly from
// factors, then torchaudio.functional.speed, a resampling from
// int(factor·orig_freq) to orig_freq Hz, which changes the length. The
// output holds the slowest factor's length; the valid length says how
// much of it the drawn factor filled.
type speed struct {
	factors []float64
	rs      []*audioproc.Resampler
	w       wave
	m       int
}

func newSpeed(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		Orig    int       `json:"orig_freq"`
		Factors []float64 `json:"factors"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.Orig < 1 {
		return nil, fmt.Errorf("orig_freq %d must be positive", a.Orig)
	}
	if len(a.Factors) == 0 || len(a.Factors) > 64 {
		return nil, fmt.Errorf("factors %v: give 1 to 64 of them", a.Factors)
	}
	s := &speed{factors: a.Factors}
	for _, f := range a.Factors {
		if !(f > 0) || math.IsInf(f, 0) || int(f*float64(a.Orig)) < 1 {
			return nil, fmt.Errorf("factors %v: %v must be positive, and factor·orig_freq at least 1", a.Factors, f)
		}
		r, err := audioproc.NewResampler(int(f*float64(a.Orig)), a.Orig, 6, 0.99)
		if err != nil {
			return nil, fmt.Errorf("factor %v: %w", f, err)
		}
		s.rs = append(s.rs, r)
	}
	return s, nil
}

func (o *speed) Out(in pipeline.Spec) (pipeline.Spec, error) {
	w, err := needWave(in, "waveforms", wavePlain, true, 1)
	if err != nil {
		return in, err
	}
	o.w, o.m = w, 0
	for _, r := range o.rs {
		o.m = max(o.m, r.OutLen(w.n))
	}
	return waveform.SpecOf(w.lead, o.m), nil
}

// Factor is the index of the factor drawn for the sample in c under key.
func (o *speed) Factor(c *pipeline.Ctx, key int) int {
	return c.Rand(key).IntN(len(o.factors))
}

func (o *speed) Run(c *pipeline.Ctx, key int, in, out []byte) error {
	return resampleRows(o.rs[o.Factor(c, key)], o.w, in, out, o.m)
}
