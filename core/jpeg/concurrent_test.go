package jpeg

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
)

// Decoders share no state: several goroutines, each with its own Decoder,
// must produce exactly what a single decoder produces. Run with -race.
func TestConcurrentDecoders(t *testing.T) {
	const w, h = 240, 180
	files := [][]byte{
		encodeT(t, gradient(w, h), w, h, 90, encodeOptions{subsample: true}),
		encodeT(t, gradient(w, h), w, h, 80, encodeOptions{progressive: true}),
	}
	rng := rand.New(rand.NewPCG(9, 10))
	type job struct {
		file int
		c    cropCase
		want []byte
	}
	var jobs []job
	ref := NewDecoder()
	for i := 0; i < 40; i++ {
		j := job{file: i % len(files), c: randomCrop(rng, w, h)}
		j.want = make([]byte, j.c.ow*j.c.oh*3)
		if err := ref.DecodeCropResize(files[j.file], j.c.r, j.c.ow, j.c.oh, j.want); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	ref.Close()

	const workers = 6
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			d := NewDecoder()
			defer d.Close()
			full := make([]byte, w*h*3)
			for round := 0; round < 3; round++ {
				for k := range jobs {
					j := jobs[(k+g*7)%len(jobs)] // different order per worker
					got := make([]byte, len(j.want))
					if err := d.DecodeCropResize(files[j.file], j.c.r, j.c.ow, j.c.oh, got); err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(got, j.want) {
						t.Errorf("worker %d: %v differs from the single-threaded result", g, j.c)
						return
					}
					if _, _, err := d.Decode(files[j.file], full); err != nil {
						errs <- err
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
