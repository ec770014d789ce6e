package loader

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
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
		mapped := open(t, fc.path)
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
