package audio

import (
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/waveform"
)

// mask is SpecAugment's masking (torchaudio's TimeMasking and
// FrequencyMasking, n times as its SpecAugment applies them) of a
// spectrogram (F, T) or (C, F, T), every channel alike (iid_masks
// False). Each mask draws as torchaudio.functional.mask_along_axis does:
// width = U·max_width, start = U·(size − width), and fills
// [int(start), int(start) + int(width)) with mask_value, where max_width
// is min(max_width, int(size·p)) for p < 1 and size is the axis' length
// (for time, the valid frames). The uniform draws come from the op's key
// (torch's global generator has no per-sample key), two per mask, in
// that order.
type mask struct {
	time     bool
	maxWidth int
	n        int
	p        float64
	value    float32
	w        wave
	f        int // frequency bands
}

func newTimeMask(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) { return newMask(raw, true) }
func newFreqMask(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	return newMask(raw, false)
}
func (o *mask) InPlace() bool { return o.w.framed }
func (o *mask) axisName() string {
	if o.time {
		return "time_mask_param"
	}
	return "freq_mask_param"
}

func newMask(raw json.RawMessage, time bool) (pipeline.Op, error) {
	a := struct {
		MaxWidth int     `json:"mask_param"`
		N        *int    `json:"n"`
		P        float64 `json:"p"`
		Value    float64 `json:"mask_value"`
	}{P: 1}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	o := &mask{time: time, maxWidth: a.MaxWidth, n: 1, p: a.P, value: float32(a.Value)}
	if a.N != nil {
		o.n = *a.N
	}
	if a.MaxWidth < 0 {
		return nil, fmt.Errorf("%s %d must not be negative", o.axisName(), a.MaxWidth)
	}
	if o.n < 0 || o.n > 1000 {
		return nil, fmt.Errorf("n %d out of range [0, 1000]", o.n)
	}
	if err := pipeline.Prob("p", a.P); err != nil {
		return nil, err
	}
	if err := checkFinite("mask_value", a.Value); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *mask) Out(in pipeline.Spec) (pipeline.Spec, error) {
	w, err := needWave(in, "spectrograms", "(F, T) or (C, F, T)", false, 1, 2)
	if err != nil {
		return in, err
	}
	o.w, o.f = w, w.lead[len(w.lead)-1]
	return waveform.SpecOf(w.lead, w.n), nil
}

// Masks are the [start, end) ranges the op draws for the sample in c
// under key, along an axis of size entries.
func (o *mask) Masks(c *pipeline.Ctx, key, size int) [][2]int {
	width := o.maxWidth
	if o.p < 1 {
		width = min(width, int(float64(size)*o.p))
	}
	if width < 1 || o.n == 0 || size < 1 {
		return nil
	}
	r := c.Rand(key)
	out := make([][2]int, 0, o.n)
	for i := 0; i < o.n; i++ {
		w := r.Float64() * float64(width)
		// A width past the axis makes the start negative, as in torch,
		// whose mask then begins at 0.
		s := int(r.Float64() * (float64(size) - w)) // truncated toward 0, as torch's long()
		out = append(out, [2]int{max(s, 0), min(max(s+int(w), 0), size)})
	}
	return out
}

func (o *mask) Run(c *pipeline.Ctx, key int, in, out []byte) error {
	if err := aligned(in, out); err != nil {
		return err
	}
	valid, err := o.w.valid(in) // frames past it stay the zeros they are
	if err != nil {
		return err
	}
	dst := rows{o.w.rows, o.w.n}
	if o.w.framed {
		pipeline.CopyIfNeeded(out, in)
	} else {
		for r := 0; r < o.w.rows; r++ {
			copy(dst.row(out, r), o.w.row(in, r))
		}
		waveform.SetLength(out, dst.n, dst.m, valid)
	}
	size := o.f
	if o.time {
		size = valid
	}
	for _, m := range o.Masks(c, key, size) {
		for row := 0; row < o.w.rows; row++ {
			line := dst.row(out, row)
			if o.time {
				for t := m[0]; t < m[1]; t++ {
					line[t] = o.value
				}
			} else if f := row % o.f; f >= m[0] && f < m[1] {
				for t := range line[:valid] {
					line[t] = o.value
				}
			}
		}
	}
	return nil
}
