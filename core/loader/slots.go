package loader

import (
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// liveSlots counts slots allocated and not yet unmapped, over all loaders.
var liveSlots atomic.Int64

// LiveSlots is the number of batch slots in memory (for leak checks).
func LiveSlots() int64 { return liveSlots.Load() }

// slot is the memory of one batch: one buffer per output, mapped outside the
// Go heap so C and torch may hold pointers into it. It returns to its pool
// only when every tensor made from it has been released.
type slot struct {
	bufs [][]byte
	refs atomic.Int32
	pool *slotPool
}

// Release drops one reference; the last one gives the slot back.
func (s *slot) Release() {
	switch n := s.refs.Add(-1); {
	case n == 0:
		s.pool.put(s)
	case n < 0:
		panic("batch slot released more often than it was shared")
	}
}

func (s *slot) unmap() {
	for _, b := range s.bufs {
		if len(b) > 0 {
			unix.Munmap(b)
		}
	}
	s.bufs = nil
	liveSlots.Add(-1)
}

// slotPool is a loader's ring of slots. It starts with `base` slots and grows
// only when the consumer would otherwise wait forever, i.e. when the caller
// still holds older batches, bounded by maxBytes.
type slotPool struct {
	sizes    []int
	base     int
	maxBytes int64

	mu        sync.Mutex
	cond      *sync.Cond
	free      []*slot
	total     int
	starving  int // consumers waiting for a batch no slot is free for
	grown     int // slots allocated beyond base
	closed    bool
	lastError error
}

func newSlotPool(sizes []int, base int, maxBytes int64) *slotPool {
	p := &slotPool{sizes: sizes, base: base, maxBytes: maxBytes}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *slotPool) slotBytes() int64 {
	var n int64
	for _, s := range p.sizes {
		n += int64(s)
	}
	return n
}

// get returns a free slot with refs set to 1, waiting while none is free and
// growing the pool when a consumer is starved. It gives up when stop is closed.
func (p *slotPool) get(stop <-chan struct{}) (*slot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		select {
		case <-stop:
			return nil, errStopped
		default:
		}
		if p.closed {
			return nil, errStopped
		}
		if n := len(p.free); n > 0 {
			s := p.free[n-1]
			p.free = p.free[:n-1]
			s.refs.Store(1)
			return s, nil
		}
		if p.total < p.base || p.starving > 0 {
			if p.total >= p.base && int64(p.total+1)*p.slotBytes() > p.maxBytes {
				return nil, fmt.Errorf("the batches still held use %d MiB of batch memory, the limit: "+
					"release old batches (or raise max_batch_memory)", int64(p.total)*p.slotBytes()>>20)
			}
			s, err := p.alloc()
			if err != nil {
				return nil, err
			}
			if p.total > p.base {
				p.grown++
			}
			return s, nil
		}
		p.cond.Wait()
	}
}

func (p *slotPool) alloc() (*slot, error) {
	s := &slot{pool: p}
	for _, n := range p.sizes {
		if n == 0 {
			s.bufs = append(s.bufs, nil)
			continue
		}
		b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			for _, b := range s.bufs {
				if b != nil {
					unix.Munmap(b)
				}
			}
			return nil, fmt.Errorf("allocate %d bytes of batch memory: %w", n, err)
		}
		s.bufs = append(s.bufs, b)
	}
	liveSlots.Add(1)
	p.total++
	s.refs.Store(1)
	return s, nil
}

func (p *slotPool) put(s *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.total--
		s.unmap()
		return
	}
	p.free = append(p.free, s)
	p.cond.Broadcast()
}

// starve marks a consumer as waiting (or not) for a batch.
func (p *slotPool) starve(delta int) {
	p.mu.Lock()
	p.starving += delta
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *slotPool) wake() {
	p.mu.Lock()
	p.cond.Broadcast()
	p.mu.Unlock()
}

// close unmaps free slots now and the others when they are released.
func (p *slotPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, s := range p.free {
		p.total--
		s.unmap()
	}
	p.free = nil
	p.cond.Broadcast()
}
