package audio

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/ffcv-go/ffcv-go/core/audioproc"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/waveform"
)

// melOp is torchaudio.transforms.MelSpectrogram: |STFT|^power through a
// mel filter bank, (N,) to (n_mels, T) and (C, N) to (C, n_mels, T),
// T = 1 + N // hop_length when centred.
type melOp struct {
	nFFT, win, hop int
	center         bool
	pad            audioproc.PadMode
	power          float64
	bank           *audioproc.MelBank
	nMels          int
	name           string
	w              wave
	frames         int
}

// melScratch is a worker's spectrogram plan and band buffer.
type melScratch struct {
	s   *audioproc.Spectrogram
	buf []float64
}

func newMel(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	a := struct {
		SampleRate int      `json:"sample_rate"`
		NFFT       int      `json:"n_fft"`
		WinLength  *int     `json:"win_length"`
		HopLength  *int     `json:"hop_length"`
		FMin       float64  `json:"f_min"`
		FMax       *float64 `json:"f_max"`
		NMels      int      `json:"n_mels"`
		Power      float64  `json:"power"`
		Norm       *string  `json:"norm"`
		MelScale   string   `json:"mel_scale"`
		Center     *bool    `json:"center"`
		PadMode    string   `json:"pad_mode"`
	}{SampleRate: 16000, NFFT: 400, NMels: 128, Power: 2}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.SampleRate < 1 {
		return nil, fmt.Errorf("sample_rate %d must be positive", a.SampleRate)
	}
	o := &melOp{nFFT: a.NFFT, win: a.NFFT, center: a.Center == nil || *a.Center, power: a.Power, nMels: a.NMels}
	if a.WinLength != nil {
		o.win = *a.WinLength
	}
	o.hop = o.win / 2
	if a.HopLength != nil {
		o.hop = *a.HopLength
	}
	var err error
	if o.pad, err = audioproc.ParsePadMode(a.PadMode); err != nil {
		return nil, err
	}
	// Checks n_fft, win_length, hop_length and power.
	if _, err := audioproc.NewSpectrogram(o.nFFT, o.win, o.hop, o.center, o.pad, o.power); err != nil {
		return nil, err
	}
	fMax := float64(a.SampleRate / 2)
	if a.FMax != nil {
		fMax = *a.FMax
	}
	slaneyNorm := false
	if a.Norm != nil {
		if *a.Norm != "slaney" {
			return nil, fmt.Errorf("norm %q must be None or 'slaney'", *a.Norm)
		}
		slaneyNorm = true
	}
	scale := audioproc.HTK
	switch a.MelScale {
	case "", "htk":
	case "slaney":
		scale = audioproc.Slaney
	default:
		return nil, fmt.Errorf("mel_scale %q must be 'htk' or 'slaney'", a.MelScale)
	}
	if err := checkFinite("f_min", a.FMin); err != nil {
		return nil, err
	}
	if err := checkFinite("f_max", fMax); err != nil {
		return nil, err
	}
	nFreqs := o.nFFT/2 + 1
	if o.bank, err = audioproc.NewMelBank(audioproc.BinFreqs(nFreqs, float64(a.SampleRate/2)), a.FMin, fMax, a.NMels, slaneyNorm, scale); err != nil {
		return nil, err
	}
	o.name = scratchName("mel")
	return o, nil
}

// specOut is the spectrogram rows of w's waveforms: (bands, 8 + 4·T),
// or (C, bands, 8 + 4·T) for C > 1 channels.
func specOut(w wave, bands, frames int) pipeline.Spec {
	if w.rows == 1 {
		return waveform.SpecOf([]int{bands}, frames)
	}
	return waveform.SpecOf([]int{w.rows, bands}, frames)
}

func (o *melOp) Out(in pipeline.Spec) (pipeline.Spec, error) {
	w, err := needWave(in, "waveforms", wavePlain, true, 1)
	if err != nil {
		return in, err
	}
	o.w = w
	sp, _ := audioproc.NewSpectrogram(o.nFFT, o.win, o.hop, o.center, o.pad, o.power)
	o.frames = sp.Frames(w.n)
	if o.frames < 1 {
		return in, fmt.Errorf("%d samples make no frame of n_fft %d without center", w.n, o.nFFT)
	}
	return specOut(w, o.nMels, o.frames), nil
}

func (o *melOp) scratch(c *pipeline.Ctx, n int) *melScratch {
	sc := c.State(o.name, func() any {
		s, _ := audioproc.NewSpectrogram(o.nFFT, o.win, o.hop, o.center, o.pad, o.power)
		return &melScratch{s: s}
	}).(*melScratch)
	sc.buf = growF64(sc.buf, n)
	return sc
}

func growF64(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

func (o *melOp) Run(c *pipeline.Ctx, _ int, in, out []byte) error {
	if err := aligned(in, out); err != nil {
		return err
	}
	valid, err := o.w.valid(in)
	if err != nil {
		return err
	}
	T := o.frames
	sc := o.scratch(c, o.nMels*T)
	frames := min(sc.s.Frames(valid), T)
	if valid == 0 {
		frames = 0
	}
	dst := rows{o.w.rows * o.nMels, T}
	for row := 0; row < o.w.rows; row++ {
		audioproc.MelFrames(sc.s, o.bank, o.w.row(in, row)[:valid], frames, sc.buf, T)
		for m := 0; m < o.nMels; m++ {
			d, src := dst.row(out, row*o.nMels+m), sc.buf[m*T:]
			for t := 0; t < frames; t++ {
				d[t] = float32(src[t])
			}
		}
	}
	dst.finish(out, frames)
	return nil
}

// whisper is whisper.audio.log_mel_spectrogram on 16 kHz audio: a
// centred 400-point STFT every 160 samples with its last frame dropped,
// |X|² through librosa's Slaney mel bank (80 or 128 bands), log10 of it
// clamped at 1e-10, floored at the sample's maximum − 8, then (x + 4)/4.
// With pad_or_trim the waveform is first cut or zero-padded to 30 s
// (whisper.audio.pad_or_trim), which makes 3000 frames.
type whisper struct {
	nMels  int
	pad    bool
	bank   *audioproc.MelBank
	name   string
	w      wave
	n      int // samples the features are computed over
	frames int
}

func newWhisper(_ pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	a := struct {
		NMels     int   `json:"n_mels"`
		PadOrTrim *bool `json:"pad_or_trim"`
	}{NMels: 80}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.NMels != 80 && a.NMels != 128 {
		return nil, fmt.Errorf("n_mels %d must be 80 or 128", a.NMels)
	}
	bank, err := audioproc.NewWhisperBank(a.NMels)
	if err != nil {
		return nil, err
	}
	return &whisper{nMels: a.NMels, pad: a.PadOrTrim == nil || *a.PadOrTrim, bank: bank, name: scratchName("whisper")}, nil
}

func (o *whisper) Out(in pipeline.Spec) (pipeline.Spec, error) {
	w, err := needWave(in, "16 kHz waveforms", wavePlain, true, 1)
	if err != nil {
		return in, err
	}
	o.w, o.n = w, w.n
	if o.pad {
		o.n = audioproc.WhisperSamples
	}
	o.frames = o.n / audioproc.WhisperHop
	if o.frames < 1 {
		return in, fmt.Errorf("%d samples make no frame (Whisper's hop is %d)", w.n, audioproc.WhisperHop)
	}
	return specOut(w, o.nMels, o.frames), nil
}

type whisperScratch struct {
	s    *audioproc.Spectrogram
	buf  []float64
	wave []float32
}

func (o *whisper) Run(c *pipeline.Ctx, _ int, in, out []byte) error {
	if err := aligned(in, out); err != nil {
		return err
	}
	valid, err := o.w.valid(in)
	if err != nil {
		return err
	}
	sc := c.State(o.name, func() any {
		s, _ := audioproc.NewSpectrogram(audioproc.WhisperNFFT, audioproc.WhisperNFFT, audioproc.WhisperHop, true, audioproc.Reflect, 2)
		return &whisperScratch{s: s}
	}).(*whisperScratch)
	n := valid // the samples Whisper sees: the valid ones, or 30 s of them
	if o.pad {
		n = o.n
	}
	frames := n / audioproc.WhisperHop
	T, per := o.frames, o.nMels*o.frames
	sc.buf = growF64(sc.buf, o.w.rows*per)
	// Padded to 30 s, the frames that see only the zeros after the valid
	// samples (their reflection at the end too, when the zeros are longer
	// than half a window) have zero power: they are not computed, and
	// the padded signal is built only as far as the computed ones read.
	computed, padded := frames, n
	if vn := min(valid, n); o.pad && vn+audioproc.WhisperNFFT/2 < n {
		computed = min(frames, (vn+audioproc.WhisperNFFT/2+audioproc.WhisperHop-1)/audioproc.WhisperHop)
		padded = min(n, vn+audioproc.WhisperNFFT)
	}
	for row := 0; row < o.w.rows; row++ {
		src := o.w.row(in, row)[:valid]
		if o.pad {
			sc.wave = append(sc.wave[:0], src[:min(valid, padded)]...)
			sc.wave = slices.Grow(sc.wave, padded-len(sc.wave))[:padded]
			clear(sc.wave[min(valid, padded):])
			src = sc.wave
		}
		audioproc.MelFrames(sc.s, o.bank, src, computed, sc.buf[row*per:], T)
		for m := 0; m < o.nMels; m++ {
			clear(sc.buf[row*per+m*T+computed : row*per+m*T+frames])
		}
	}
	// The maximum is the whole sample's, as Whisper takes it over its
	// input; frames past the valid ones are not the sample's.
	mx := math.Inf(-1)
	for r := 0; r < o.w.rows*o.nMels; r++ {
		mx = audioproc.Log10Max(sc.buf[r*T:r*T+frames], mx)
	}
	dst := rows{o.w.rows * o.nMels, T}
	for r := 0; r < dst.n; r++ {
		d := dst.row(out, r)[:frames]
		for t, v := range sc.buf[r*T : r*T+frames] {
			d[t] = float32(audioproc.WhisperScale(v, mx))
		}
	}
	dst.finish(out, frames)
	return nil
}
