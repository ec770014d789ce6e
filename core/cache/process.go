package cache

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/ffcv-go/ffcv-go/core/beton"
)

// Process is the process cache: heap pages are read with pread into buffers
// the loader owns, ahead of use (the scheduler acquires samples in epoch order
// while workers are still decoding earlier ones), at most maxResident at a
// time. A page is dropped as soon as its last use in the planned order is
// done; pages still needed later are kept while there is room.
type Process struct {
	r           *beton.Reader
	maxResident int

	mu        sync.Mutex
	cond      *sync.Cond
	pages     map[int64]*page
	remaining map[int64]int // uses left in the plan
	free      [][]byte
	stats     Stats
	closed    bool
}

type page struct {
	buf    []byte
	refs   int
	loaded chan struct{}
	err    error
}

// NewProcess opens a process cache over r keeping at most maxResident pages.
func NewProcess(r *beton.Reader, maxResident int) (*Process, error) {
	p := &Process{r: r, maxResident: max(maxResident, 1), pages: map[int64]*page{}, remaining: map[int64]int{}}
	p.cond = sync.NewCond(&p.mu)
	return p, nil
}

// Plan records how many times each page will be used this epoch.
func (p *Process) Plan(order []uint64) {
	rem := map[int64]int{}
	for _, i := range order {
		if pg := PageOf(p.r, i); pg >= 0 {
			rem[pg]++
		}
	}
	p.mu.Lock()
	p.remaining = rem
	p.mu.Unlock()
}

// TryAcquire is Acquire that fails instead of waiting for room.
func (p *Process) TryAcquire(i uint64) (bool, error) { return p.acquire(i, false) }

// Acquire pins the page of sample i, starting its read if it is not resident.
func (p *Process) Acquire(i uint64) error {
	_, err := p.acquire(i, true)
	return err
}

func (p *Process) acquire(i uint64, wait bool) (bool, error) {
	num := PageOf(p.r, i)
	if num < 0 {
		return true, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.closed {
			return false, fmt.Errorf("cache closed")
		}
		if pg, ok := p.pages[num]; ok {
			pg.refs++
			p.remaining[num]--
			return true, nil
		}
		if len(p.pages) < p.maxResident || p.evictIdle() {
			break
		}
		if !wait {
			return false, nil
		}
		p.cond.Wait()
	}
	pg := &page{refs: 1, loaded: make(chan struct{})}
	if n := len(p.free); n > 0 {
		pg.buf, p.free = p.free[n-1], p.free[:n-1]
	} else {
		pg.buf = make([]byte, p.r.PageSize())
	}
	p.pages[num] = pg
	p.remaining[num]--
	p.stats.PeakResidentPages = max(p.stats.PeakResidentPages, len(p.pages))
	p.stats.PagesRead++
	go p.load(num, pg)
	return true, nil
}

// evictIdle drops one resident page nobody holds; called with mu held.
func (p *Process) evictIdle() bool {
	for num, pg := range p.pages {
		if pg.refs == 0 {
			p.drop(num, pg)
			return true
		}
	}
	return false
}

func (p *Process) drop(num int64, pg *page) {
	delete(p.pages, num)
	<-pg.loaded // never recycle a buffer a read is still filling
	p.free = append(p.free, pg.buf)
}

func (p *Process) load(num int64, pg *page) {
	defer close(pg.loaded)
	start, end, err := p.r.PageRange(uint64(num))
	if err != nil {
		pg.err = err
		return
	}
	if _, err := p.r.ReadAt(pg.buf[:end-start], int64(start)); err != nil {
		if errors.Is(err, io.EOF) {
			// The header said the page is there: the file shrank while open.
			err = fmt.Errorf("%w: the file ends early (truncated while in use?)", beton.ErrFormat)
		}
		pg.err = fmt.Errorf("read page %d: %w", num, err)
	}
}

// Read returns field f of sample i from its resident page.
func (p *Process) Read(i uint64, f int) ([]byte, []byte, error) {
	col, ptr, size, ok, err := p.r.Locate(i, f)
	if err != nil || !ok {
		return col, nil, err
	}
	num := int64(ptr / p.r.PageSize())
	if pinned := PageOf(p.r, i); num != pinned {
		// Writers put a sample's allocations on one page; only that page is
		// pinned, another one may be evicted under the reader.
		return nil, nil, fmt.Errorf("%w: %s: sample %d, field %q: heap bytes on page %d, the sample's other bytes on page %d",
			beton.ErrFormat, p.r.Path, i, p.r.Fields[f].Name, num, pinned)
	}
	p.mu.Lock()
	pg, resident := p.pages[num]
	p.mu.Unlock()
	if !resident {
		return nil, nil, fmt.Errorf("sample %d read without being acquired", i)
	}
	<-pg.loaded
	if pg.err != nil {
		return nil, nil, pg.err
	}
	o := ptr - uint64(num)*p.r.PageSize()
	return col, pg.buf[o : o+size : o+size], nil
}

// Release unpins the page of sample i, dropping it after its last use.
func (p *Process) Release(i uint64) {
	num := PageOf(p.r, i)
	if num < 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pg, ok := p.pages[num]
	if !ok {
		return
	}
	pg.refs--
	if pg.refs == 0 && p.remaining[num] <= 0 {
		p.drop(num, pg)
	}
	p.cond.Broadcast()
}

// Stats returns the counters.
func (p *Process) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close drops every page and wakes blocked callers.
func (p *Process) Close() {
	p.mu.Lock()
	p.closed = true
	for num, pg := range p.pages {
		p.drop(num, pg)
	}
	p.free = nil
	p.cond.Broadcast()
	p.mu.Unlock()
}
