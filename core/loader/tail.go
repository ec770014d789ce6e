package loader

import (
	"fmt"
	"sync"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// RunTail runs a tail program (built-in operations that follow a Python
// stage) over batch number batch of epoch: n samples of p.In in in, written
// as p.Out into out. ids are the batch's sample ids. Sample j of the batch has
// position batch*BatchSize+j and the loader's seed, so every random draw is
// the one the per-sample workers would have made in the same place.
func (l *Loader) RunTail(p *pipeline.Program, epoch uint64, batch int, ids []uint64, in, out []byte) error {
	n := len(ids)
	if len(in) != n*p.In.Bytes() || len(out) != n*p.Out.Bytes() {
		return fmt.Errorf("tail of field %q: %d samples need %d input and %d output bytes, got %d and %d",
			l.r.Fields[p.Field].Name, n, n*p.In.Bytes(), n*p.Out.Bytes(), len(in), len(out))
	}
	seed := mixSeed(l.cfg.Seed, uint64(l.cfg.Rank))
	staged := out
	if p.HasBatchOps() {
		staged = make([]byte, n*p.SampleOut.Bytes())
	}
	if p.HasSampleOps() {
		if err := l.runTailSamples(p, seed, epoch, batch, ids, in, staged); err != nil {
			return err
		}
	} else {
		copy(staged, in)
	}
	if !p.HasBatchOps() {
		return nil
	}
	bc := &pipeline.BatchCtx{Seed: seed, Epoch: epoch, Index: uint64(batch)}
	if err := p.RunBatch(bc, staged, out, n); err != nil {
		return fmt.Errorf("%s: batch %d, field %q: %w", l.r.Path, batch, l.r.Fields[p.Field].Name, err)
	}
	return nil
}

// runTailSamples splits the batch over the loader's workers.
func (l *Loader) runTailSamples(p *pipeline.Program, seed, epoch uint64, batch int, ids []uint64, in, out []byte) error {
	n, isz, osz := len(ids), p.In.Bytes(), p.SampleOut.Bytes()
	workers := min(l.cfg.Workers, n)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs[w] = fmt.Errorf("internal error: %v", r)
				}
			}()
			c := pipeline.NewCtx()
			defer c.Close()
			c.Seed, c.Epoch = seed, epoch
			var s pipeline.Scratch
			for j := w; j < n; j += workers {
				c.Sample, c.Pos = ids[j], uint64(batch*l.cfg.BatchSize+j)
				if err := p.Run(c, &s, in[j*isz:(j+1)*isz], out[j*osz:(j+1)*osz]); err != nil {
					errs[w] = fmt.Errorf("%s, field %q: %w", l.r.Where(ids[j]), l.r.Fields[p.Field].Name, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
