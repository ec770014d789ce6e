//go:build !ffcv_nocodecs

package waveform_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/audioenc"
	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
	"github.com/ffcv-go/ffcv-go/core/pipeline/waveform"
)

// noisePatterns are the sign patterns of the noise clips of noiseFile, by
// clip: constant, alternating, and flipping every second frame.
var noisePatterns = [][]int{{1}, {1, -1}, {1, 1, -1, -1}}

// noiseFile writes a file whose AudioField name holds mono clips of 1000
// frames at hz, clip j ±0.25 by noisePatterns[j].
func noiseFile(t *testing.T, name string, hz int) *beton.Reader {
	t.Helper()
	descs := []field.Desc{{Type: field.Audio, Name: name, Audio: &field.AudioArgs{Storage: "flac"}}}
	enc, err := audioenc.NewEncoder(descs[0], audioenc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return betontest.Write(t, filepath.Join(t.TempDir(), name+".beton"), descs, []field.Encoder{enc},
		beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 1}, len(noisePatterns), func(j int) []field.Value {
			data := make([]byte, 2*1000)
			for k := 0; k < 1000; k++ {
				p := noisePatterns[j]
				binary.LittleEndian.PutUint16(data[2*k:], uint16(int16(8192*p[k%len(p)])))
			}
			return []field.Value{{Data: data, Channels: 1, Int: int64(hz), Width: audioenc.Int16}}
		})
}

// patternOf is the noise clip whose pattern the residual d (the noise as
// added: the clip scaled, from some frame on) follows, or -1.
func patternOf(d []float32) int {
	for j, p := range noisePatterns {
		for phase := range p {
			ok := true
			for k, v := range d {
				want := float64(d[0]) * float64(p[(k+phase)%len(p)]*p[phase])
				if math.Abs(float64(v)-want) > 1e-4*math.Abs(want)+1e-6 {
					ok = false
					break
				}
			}
			if ok {
				return j
			}
		}
	}
	return -1
}

// TestAddNoiseFromSource: with source, AddNoise draws its noise from that
// source of the mixture alone (by name or index; a range of a reader for a
// source its epochs take, a reader of its own for a side source), keyed.
func TestAddNoiseFromSource(t *testing.T) {
	r, nr := audioFile(t, "flac"), noiseFile(t, "noise", rate)
	sources := []pipeline.Source{{Name: "speech", Reader: r, Size: 3}, {Name: "noise", Reader: nr, Size: 2},
		{Name: "tail", Reader: nr, Start: 2, Size: 1}}
	build := func(source any) *pipeline.Program {
		t.Helper()
		p, err := pipeline.Build(r, 0, []json.RawMessage{optest.Spec(t, "audio", nil),
			optest.Spec(t, "audio_add_noise", map[string]any{"snr_db": []float64{5, 5}, "noise": "noise",
				"source": source})}, sources...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	clean := optest.Build(t, r, 0, optest.Named{Name: "audio", Args: map[string]any{}})
	_, m, _ := waveform.Rows(clean.SampleOut)
	for _, tc := range []struct {
		source any
		want   []int // the noise clips drawn
	}{{"noise", []int{0, 1}}, {1.0, []int{0, 1}}, {"tail", []int{2}}, {2, []int{2}}} {
		p := build(tc.source)
		seen := map[int]int{}
		for i, n := range lengths {
			for pos := uint64(0); pos < 12; pos++ {
				x, y := run(t, clean, r, i, pos), run(t, p, r, i, pos)
				xs, ys := waveform.Row(x, m, 0), waveform.Row(y, m, 0)
				d := make([]float32, n)
				for k := range d {
					d[k] = ys[k] - xs[k]
				}
				seen[patternOf(d)]++
			}
		}
		for j := range seen {
			if !slices.Contains(tc.want, j) {
				t.Fatalf("source %v: drew noise like clip %d (counts %v), want only clips %v", tc.source, j, seen, tc.want)
			}
		}
		if len(seen) != len(tc.want) {
			t.Fatalf("source %v: drew clips %v, want every one of %v", tc.source, seen, tc.want)
		}
	}
}

// TestAddNoiseSourceRefused: a source of a loader that reads no mixture, an
// unknown or ambiguous name, an index past the sources, a source without
// the noise field, and noise at another rate than the clips' are refused,
// naming them.
func TestAddNoiseSourceRefused(t *testing.T) {
	r, nr, other := audioFile(t, "flac"), noiseFile(t, "noise", rate), noiseFile(t, "noise", 2*rate)
	mix := []pipeline.Source{{Name: "speech", Reader: r, Size: 3}, {Name: "noise", Reader: nr, Size: 3}}
	for _, tc := range []struct {
		name    string
		source  any
		noise   string
		sources []pipeline.Source
		want    string
	}{
		{"no mixture", "noise", "noise", nil, `source "noise": the loader reads one dataset`},
		{"unknown name", "musan", "noise", mix, `source "musan" is not a source of the Mixture (its sources: 0: "speech", 1: "noise")`},
		{"index past the sources", 2, "noise", mix, `source 2: the Mixture has 2 sources`},
		{"two sources of the name", "noise", "noise", append(mix[:1:1], mix[1], mix[1]), `source "noise" names sources 1 and 2`},
		{"no such field", "speech", "noise", mix, `noise "noise" is not an AudioField of source "speech" (its fields: audio)`},
		{"another rate", "noise", "noise", []pipeline.Source{mix[0], {Name: "noise", Reader: other, Size: 3}},
			`noise "noise" of source "noise" at 2000 Hz, the clips at 1000 Hz`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.Build(r, 0, []json.RawMessage{optest.Spec(t, "audio", nil),
				optest.Spec(t, "audio_add_noise", map[string]any{"snr_db": []float64{0, 10}, "noise": tc.noise,
					"source": tc.source})}, tc.sources...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "audio_add_noise", Args: map[string]any{"snr_db": []float64{0, 10}, "noise": "n", "source": -1}, Want: "source -1: give a source"},
		{Name: "audio_add_noise", Args: map[string]any{"snr_db": []float64{0, 10}, "noise": "n", "source": true}, Want: "source true: give a source"},
	})
}
