package cache

import (
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// livePages counts page buffers mapped and not yet unmapped, over all pools.
var livePages atomic.Int64

// LivePages is the number of process-cache page buffers in memory (for leak
// checks).
func LivePages() int64 { return livePages.Load() }

// Pages is a loader's pool of page buffers for its process caches, one per
// epoch. The buffers are mapped outside the Go heap: a closed loader gives
// their memory back to the system at once, where buffers of the Go heap
// would wait for Go's collector and then its scavenger, and the next loader
// would allocate beside them. Epochs reuse the buffers of earlier ones.
type Pages struct {
	size int

	mu     sync.Mutex
	free   [][]byte
	closed bool
}

// NewPages returns an empty pool of buffers of size bytes.
func NewPages(size int) *Pages { return &Pages{size: size} }

func (ps *Pages) get() ([]byte, error) {
	ps.mu.Lock()
	if n := len(ps.free); n > 0 {
		b := ps.free[n-1]
		ps.free = ps.free[:n-1]
		ps.mu.Unlock()
		return b, nil
	}
	ps.mu.Unlock()
	b, err := unix.Mmap(-1, 0, ps.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map a %d-byte page buffer: %w", ps.size, err)
	}
	livePages.Add(1)
	return b, nil
}

// put takes a buffer back; once the pool is closed it is unmapped instead.
func (ps *Pages) put(b []byte) {
	ps.mu.Lock()
	if !ps.closed {
		ps.free = append(ps.free, b)
		ps.mu.Unlock()
		return
	}
	ps.mu.Unlock()
	unmapPage(b)
}

// Close unmaps the free buffers, and every buffer put back after it.
func (ps *Pages) Close() {
	ps.mu.Lock()
	free := ps.free
	ps.free, ps.closed = nil, true
	ps.mu.Unlock()
	for _, b := range free {
		unmapPage(b)
	}
}

func unmapPage(b []byte) {
	if err := unix.Munmap(b); err != nil {
		panic(fmt.Sprintf("unmap a page buffer: %v", err))
	}
	livePages.Add(-1)
}
