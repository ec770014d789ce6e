package loader

import (
	"fmt"
	"runtime/debug"

	"github.com/ffcv-go/ffcv-go/core/beton"
)

// Samples are read from a mapped file. If the file is truncated or replaced
// while a loader runs, touching a vanished page raises SIGBUS; the worker and
// scheduler goroutines turn it into a panic (debug.SetPanicOnFault), recovered
// at the sample, so the process survives and the sample fails with an error
// naming the file and the sample.

// panicOnFault makes faults on the calling goroutine panics; call it first
// in every goroutine that reads the mapped file.
func panicOnFault() { debug.SetPanicOnFault(true) }

// sampleFailure is the error for a panic recovered while handling a sample
// (where names it: beton.Reader.Where).
func sampleFailure(where string, r any) error {
	if _, fault := r.(interface{ Addr() uintptr }); fault {
		return fmt.Errorf("%w: %s: memory fault reading the file (was it truncated or replaced while in use?): %v",
			beton.ErrFormat, where, r)
	}
	return fmt.Errorf("%s: internal error: %v", where, r)
}

// guarded runs f for sample id, turning a panic or fault into an error.
func (it *Iterator) guarded(id uint64, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = sampleFailure(it.l.r.Where(id), r)
		}
	}()
	return f()
}

// release unpins sample id. Finding its page reads the map: if that faults,
// the page stays pinned until the iterator closes.
func (it *Iterator) release(id uint64) {
	_ = it.guarded(id, func() error { it.src.Release(id); return nil })
}
