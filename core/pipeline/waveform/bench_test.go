//go:build !ffcv_nocodecs

package waveform_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/audioenc"
	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// speechLike is n samples at 16 kHz shaped like speech for a FLAC coder:
// voiced stretches (harmonics of a wandering pitch under two formants),
// unvoiced ones (noise), and pauses, at syllable rate, as 16-bit PCM.
func speechLike(rng *rand.Rand, n int) []byte {
	const sr = 16000
	out := make([]byte, 2*n)
	phase, f0 := 0.0, 120+60*rng.Float64()
	seg, kind := 0, 0
	var amp [20]float64
	for i := 0; i < n; i++ {
		if seg == 0 {
			seg, kind = 1600+rng.IntN(3200), rng.IntN(4) // 0.1-0.3 s
		}
		seg--
		if i%160 == 0 { // the harmonics' amplitudes every 10 ms
			for h := range amp {
				f := f0 * float64(h+1)
				amp[h] = 0.15 * (math.Exp(-(f-600)*(f-600)/9e4) + 0.5*math.Exp(-(f-1800)*(f-1800)/25e4) + 0.02)
			}
		}
		f0 = math.Min(math.Max(f0+rng.NormFloat64()*0.05, 80), 250)
		phase += 2 * math.Pi * f0 / sr
		var v float64
		switch kind {
		case 0, 1: // voiced
			for h, a := range amp {
				v += a * math.Sin(float64(h+1)*phase)
			}
		case 2: // unvoiced
			v = 0.05 * rng.NormFloat64()
		default: // pause
			v = 0.002 * rng.NormFloat64()
		}
		binary.LittleEndian.PutUint16(out[2*i:], uint16(int16(math.Max(-1, math.Min(1, v))*32767)))
	}
	return out
}

// speechFile is n clips of 10-20 s of speechLike audio, FLAC in a .beton.
func speechFile(b *testing.B, n int) *beton.Reader {
	descs := []field.Desc{{Type: field.Audio, Name: "audio", Audio: &field.AudioArgs{Storage: "flac"}}}
	enc, err := audioenc.NewEncoder(descs[0], audioenc.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	clips := make([][]byte, n)
	for i := range clips {
		clips[i] = speechLike(rng, 16000*(10+rng.IntN(11)))
	}
	return betontest.Write(b, filepath.Join(b.TempDir(), "speech.beton"), descs, []field.Encoder{enc},
		beton.WriterOptions{Workers: 1}, n, func(i int) []field.Value {
			return []field.Value{{Data: clips[i], Channels: 1, Int: 16000, Width: audioenc.Int16}}
		})
}

// BenchmarkSpeech is bench/audio.py's per-utterance work on one thread:
// a random 5 s window of a 10-20 s 16 kHz FLAC clip decoded, Whisper's
// 80-band log-mel of it, and SpecAugment's masks, stage by stage (each
// sub-benchmark adds a stage to the one before).
func BenchmarkSpeech(b *testing.B) {
	r := speechFile(b, 16)
	stages := []optest.Named{
		{Name: "audio_random_crop", Args: map[string]any{"seconds": 5.0, "mono": true}},
		{Name: "whisper_log_mel", Args: map[string]any{"n_mels": 80, "pad_or_trim": false}},
		{Name: "frequency_masking", Args: map[string]any{"mask_param": 27, "n": 2}},
		{Name: "time_masking", Args: map[string]any{"mask_param": 100, "p": 0.2, "n": 2}},
	}
	for k, name := range []string{"decode", "+logmel", "+masks"} {
		ops := stages[:k+1]
		if k == 2 {
			ops = stages
		}
		b.Run(name, func(b *testing.B) {
			p := optest.Build(b, r, 0, ops...)
			out := make([]byte, p.SampleOut.Bytes())
			c := pipeline.NewCtx()
			defer c.Close()
			s := &pipeline.Scratch{}
			i := 0
			for b.Loop() {
				col, heap, err := r.Read(uint64(i%16), 0)
				if err != nil {
					b.Fatal(err)
				}
				c.Sample, c.Pos, c.Col, c.Heap = uint64(i%16), uint64(i), col, heap
				if err := p.Run(c, s, nil, out); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/utt")
		})
	}
}
