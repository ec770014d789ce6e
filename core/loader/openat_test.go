package loader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
)

// TestOpenAtBatches: a reader over an io.ReaderAt (an *os.File, a
// bytes.Reader) gives the batches of the mapped file through the process
// cache, in every order; the OS cache refuses it.
func TestOpenAtBatches(t *testing.T) {
	dir := t.TempDir()
	files := []struct {
		path    string
		outputs map[string][]string
	}{
		{writeImages(t, dir, "jpg.beton", 40, "jpg"), imagePipeline},
		{writeBlobs(t, dir, 48, 250_000), map[string][]string{"blob": {`{"op":"bytes"}`}, "label": {`{"op":"int"}`}}},
	}
	for _, fc := range files {
		mapped := betontest.Open(t, fc.path)
		raw, err := os.ReadFile(fc.path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(fc.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range []io.ReaderAt{f, bytes.NewReader(raw)} {
			r, err := beton.OpenAt(fc.path, src, int64(len(raw)), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			for _, order := range []string{"sequential", "random", "quasi_random"} {
				cfg := baseConfig()
				cfg.Order, cfg.OSCache, cfg.MaxResidentPages = order, false, 2
				want := epoch(t, newLoader(t, mapped, cfg, fc.outputs), 1, 0)
				sameEpochs(t, fc.path+" "+order, want, epoch(t, newLoader(t, r, cfg, fc.outputs), 1, 0))
			}
			cfg := baseConfig()
			if _, err := New(r, cfg, build(t, r, fc.outputs)); !errors.Is(err, beton.ErrNotMapped) {
				t.Fatalf("os_cache on a reader without a map: %v", err)
			}
		}
	}
}

// TestJoinedBatches: shards joined give the batches of the same rows written
// as one file, in every order, through both caches and through ReadAt-only
// shards.
func TestJoinedBatches(t *testing.T) {
	dir := t.TempDir()
	img, err := imageenc.NewEncoder(field.Desc{Type: field.RGBImage}, field.ImageOptions{WriteMode: "jpg", JPEGQuality: 90})
	if err != nil {
		t.Fatal(err)
	}
	descs := []field.Desc{{Type: field.RGBImage, Name: "image"}, {Type: field.Int, Name: "label"}}
	encs := []field.Encoder{img, field.NewIntEncoder()}
	write := func(name string, first, n int) string {
		return writeFile(t, filepath.Join(dir, name), descs, encs, n, func(i int) []field.Value {
			g := first + i
			return []field.Value{{Data: pixels(g), Width: imgW, Height: imgH, Channels: 3}, {Int: int64(g)}}
		})
	}
	whole := betontest.Open(t, write("whole.beton", 0, 45))
	counts := []int{17, 0, 20, 8}
	join := func(at bool) *beton.Reader {
		var shards []*beton.Reader
		first := 0
		for k, n := range counts {
			p := write(fmt.Sprintf("s%d.beton", k), first, n)
			first += n
			var r *beton.Reader
			if at {
				raw, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				r, err = beton.OpenAt(p, bytes.NewReader(raw), int64(len(raw)), nil)
				if err != nil {
					t.Fatal(err)
				}
			} else {
				r = betontest.Open(t, p)
			}
			shards = append(shards, r)
		}
		j, err := beton.Join("shards", shards)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		return j
	}
	mapped, unmapped := join(false), join(true)
	for _, order := range []string{"sequential", "random"} {
		for _, osCache := range []bool{true, false} {
			cfg := baseConfig()
			cfg.Order, cfg.OSCache, cfg.BatchSize = order, osCache, 4
			want := epoch(t, newLoader(t, whole, cfg, imagePipeline), 2, 0)
			what := fmt.Sprintf("%s, os cache %v", order, osCache)
			sameEpochs(t, what, want, epoch(t, newLoader(t, mapped, cfg, imagePipeline), 2, 0))
			if !osCache {
				sameEpochs(t, what+", ReadAt shards", want, epoch(t, newLoader(t, unmapped, cfg, imagePipeline), 2, 0))
			}
		}
	}
	// QUASI_RANDOM follows the pages, which differ between shards and one
	// file: it visits every sample once, with the same bytes.
	plain := map[string][]string{"image": {`{"op":"rgb_simple"}`}, "label": {`{"op":"int"}`}}
	cfg := baseConfig()
	cfg.Order, cfg.BatchSize, cfg.DropLast = "sequential", 1, false
	want := epoch(t, newLoader(t, whole, cfg, plain), 0, 0)
	for _, osCache := range []bool{true, false} {
		cfg.Order, cfg.OSCache = "quasi_random", osCache
		seen := map[uint64]bool{}
		for _, b := range epoch(t, newLoader(t, mapped, cfg, plain), 3, 0) {
			id := b.ids()[0]
			if seen[id] || !bytes.Equal(b.bufs[0], want[id].bufs[0]) {
				t.Fatalf("quasi_random, os cache %v: sample %d repeated or different", osCache, id)
			}
			seen[id] = true
		}
		if len(seen) != int(whole.NumSamples()) {
			t.Fatalf("quasi_random: %d samples of %d", len(seen), whole.NumSamples())
		}
	}
}
