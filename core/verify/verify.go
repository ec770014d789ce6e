// Package verify reads every sample of a .beton file the way a loader would,
// decoding images fully, and reports the samples that cannot be used.
package verify

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/ffcv-go/ffcv-go/core/audio"
	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/procs"
)

// Problem is one unusable sample field.
type Problem struct {
	Sample uint64 `json:"sample"`
	Field  string `json:"field"`
	Error  string `json:"error"`
}

// File checks every sample of r with workers goroutines (< 1: all CPUs),
// returning the problems in sample order. done, if set, counts samples checked.
func File(r *beton.Reader, workers int, done *atomic.Int64) []Problem {
	if workers < 1 {
		workers = procs.CPUs()
	}
	n := r.NumSamples()
	const chunk = 256
	var next atomic.Uint64
	var mu sync.Mutex
	var problems []Problem
	var wg sync.WaitGroup
	defer procs.Add(workers)()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := jpeg.NewDecoder()
			defer d.Close()
			var buf []byte
			for {
				lo := next.Add(chunk) - chunk
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+chunk, n); i++ {
					for f := range r.Fields {
						if err := check(r, d, &buf, i, f); err != nil {
							mu.Lock()
							problems = append(problems, Problem{i, r.Fields[f].Name, err.Error()})
							mu.Unlock()
						}
					}
					if done != nil {
						done.Add(1)
					}
					runtime.Gosched() // a schedule tick per sample (see package procs)
				}
			}
		}()
	}
	wg.Wait()
	sort.Slice(problems, func(a, b int) bool { return problems[a].Sample < problems[b].Sample })
	return problems
}

func check(r *beton.Reader, d *jpeg.Decoder, buf *[]byte, i uint64, f int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v", p)
		}
	}()
	col, heap, err := r.Read(i, f)
	if err == nil && r.Fields[f].Type == field.Mask {
		m := field.ParseMaskMeta(col)
		item, _ := r.Fields[f].ItemSize()
		n, err := m.Pixels(item, len(heap))
		if err != nil {
			return err
		}
		return field.DecodeMask(m, heap, make([]byte, n))
	}
	if err == nil && r.Fields[f].Type == field.Text {
		return field.CheckText(field.ParseTextMeta(col), heap)
	}
	if err == nil && r.Fields[f].Type == field.Video {
		return checkVideo(d, buf, col, heap)
	}
	if err == nil && r.Fields[f].Type == field.Audio {
		return checkAudio(col, heap)
	}
	if err != nil || r.Fields[f].Type != field.RGBImage {
		return err
	}
	m := field.ParseRGBMeta(col)
	if m.Mode != field.ModeJPEG {
		return nil // raw: Read checked that w*h*3 bytes lie in the heap
	}
	return checkJPEG(d, buf, heap, m.Width, m.Height)
}

// checkJPEG decodes a w×h JPEG fully.
func checkJPEG(d *jpeg.Decoder, buf *[]byte, data []byte, w, h int) error {
	jw, jh, err := d.DecodeConfig(data)
	if err != nil {
		return err
	}
	if jw != w || jh != h {
		return fmt.Errorf("JPEG is %dx%d, the metadata says %dx%d", jw, jh, w, h)
	}
	if cap(*buf) < w*h*3 {
		*buf = make([]byte, w*h*3)
	}
	_, _, err = d.Decode(data, (*buf)[:w*h*3])
	return err
}

// checkAudio decodes a whole clip: exactly the frames its metadata gives.
func checkAudio(col, heap []byte) error {
	m := field.ParseAudioMeta(col)
	if err := field.CheckAudio(m); err != nil {
		return err
	}
	if m.Frames*uint64(m.Channels) > 16384*uint64(len(heap))+1<<19 { // as audio.DecodeAll bounds it
		return fmt.Errorf("%w: a clip of %d frames in %d bytes", field.ErrData, m.Frames, len(heap))
	}
	out := make([]float32, m.Frames*uint64(m.Channels))
	return audio.Window(m.Codec, heap, m.Channels, 0, int(m.Frames), int(m.Frames), out)
}

// checkVideo decodes every frame of a video fully.
func checkVideo(d *jpeg.Decoder, buf *[]byte, col, heap []byte) error {
	m := field.ParseVideoMeta(col)
	if err := field.CheckVideo(m); err != nil {
		return err
	}
	for k := 0; k < m.Frames; k++ {
		data, err := field.VideoFrame(heap, m.Frames, k)
		if err == nil {
			err = checkJPEG(d, buf, data, m.Width, m.Height)
		}
		if err != nil {
			return fmt.Errorf("frame %d: %w", k, err)
		}
	}
	return nil
}
