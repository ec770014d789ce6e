package cache

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/trace"
)

// Process is the process cache: heap pages are read with pread (or range
// requests, for remote files) into buffers the loader owns, ahead of use, at
// most maxResident at a time. Reads start when the scheduler acquires a
// sample (in epoch order, while workers are still decoding earlier ones) and,
// for files without a map (remote ones), while there is free room, for the
// next pages of the planned order: the scheduler's own lead is short (its
// decode queue fills first), and remote reads need many in flight to hide
// their latency. Local files keep the short lead: the kernel reads ahead for
// pread. A page is dropped as soon
// as its last use in the planned order is done; pages still needed later are
// kept while there is room.
type Process struct {
	r           *beton.Reader
	maxResident int
	pool        *Pages
	rec         *trace.Recorder // page reads are traced when not nil

	mu         sync.Mutex
	cond       *sync.Cond
	pages      map[int64]*page
	remaining  map[int64]int // uses left in the plan
	plan       []uint64      // the planned order
	cursor     int           // plan position of the next sample the scheduler acquires
	scan       int           // plan positions before this were considered for read-ahead
	readsAhead bool          // beyond the scheduler (files without a map)
	free       [][]byte      // buffers of dropped pages, reused first
	stats      Stats
	closed     bool

	// Bytes read and time spent reading, by file, counted by the reads.
	shardBytes []atomic.Uint64
	shardNs    []atomic.Int64
}

type page struct {
	buf    []byte
	refs   int
	ahead  bool // read ahead and not acquired yet
	loaded chan struct{}
	err    error
}

// NewProcess opens a process cache over r keeping at most maxResident pages,
// in buffers from pool. Free gives them back.
func NewProcess(r *beton.Reader, maxResident int, pool *Pages) (*Process, error) {
	if pool == nil || uint64(pool.size) != r.PageSize() {
		return nil, fmt.Errorf("process cache of %s needs a pool of %d-byte pages", r.Path, r.PageSize())
	}
	p := &Process{r: r, maxResident: max(maxResident, 1), pool: pool, pages: map[int64]*page{},
		remaining: map[int64]int{}, readsAhead: !r.Mapped()}
	n := max(len(r.Shards()), 1)
	p.stats.ShardPages = make([]uint64, n)
	p.shardBytes, p.shardNs = make([]atomic.Uint64, n), make([]atomic.Int64, n)
	p.cond = sync.NewCond(&p.mu)
	return p, nil
}

// Trace makes p record its page reads in rec (nil: none); call it before Plan.
func (p *Process) Trace(rec *trace.Recorder) { p.rec = rec }

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
	p.plan, p.cursor, p.scan = order, 0, 0
	p.readAhead()
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
			pg.ahead = false
			p.remaining[num]--
			p.advance(i)
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
	p.start(num, 1)
	p.remaining[num]--
	p.advance(i)
	return true, nil
}

// start begins reading page num with refs holders; called with mu held.
func (p *Process) start(num int64, refs int) {
	pg := &page{refs: refs, ahead: refs == 0, loaded: make(chan struct{})}
	p.pages[num] = pg
	p.stats.PeakResidentPages = max(p.stats.PeakResidentPages, len(p.pages))
	p.stats.PagesRead++
	if k := p.r.ShardAt(uint64(num) * p.r.PageSize()); k < len(p.stats.ShardPages) {
		p.stats.ShardPages[k]++
	}
	if n := len(p.free); n > 0 {
		pg.buf, p.free = p.free[n-1], p.free[:n-1]
	} else if buf, err := p.pool.get(); err != nil {
		pg.err = err
		close(pg.loaded)
		return
	} else {
		pg.buf = buf
	}
	go p.load(num, pg)
}

// advance moves the cursor past sample i, the scheduler's latest, and reads
// ahead from there; called with mu held.
func (p *Process) advance(i uint64) {
	if p.cursor < len(p.plan) && p.plan[p.cursor] == i {
		p.cursor++
	}
	p.readAhead()
}

// readAhead starts reading the pages of the planned order after the cursor
// that are not resident, while there is free room (it never evicts), and
// marks resident ones it passes as needed soon; called with mu held.
func (p *Process) readAhead() {
	if !p.readsAhead {
		return
	}
	p.scan = max(p.scan, p.cursor)
	for ; p.scan < len(p.plan) && len(p.pages) < p.maxResident; p.scan++ {
		num := PageOf(p.r, p.plan[p.scan])
		if num < 0 {
			continue
		}
		if pg := p.pages[num]; pg == nil {
			p.start(num, 0)
		} else if pg.refs == 0 {
			pg.ahead = true // kept for this use: evict others first
		}
	}
}

// evictIdle drops one resident page nobody holds, preferring a page kept for
// a later use over one read ahead for the next samples; called with mu held.
func (p *Process) evictIdle() bool {
	victim, vpg := int64(-1), (*page)(nil)
	for num, pg := range p.pages {
		if pg.refs == 0 {
			if !pg.ahead {
				p.drop(num, pg)
				return true
			}
			victim, vpg = num, pg
		}
	}
	if vpg != nil {
		p.drop(victim, vpg)
		return true
	}
	return false
}

func (p *Process) drop(num int64, pg *page) {
	delete(p.pages, num)
	<-pg.loaded // never recycle a buffer a read is still filling
	if pg.buf != nil {
		p.free = append(p.free, pg.buf)
	}
}

func (p *Process) load(num int64, pg *page) {
	defer close(pg.loaded)
	if rec := p.rec; rec != nil {
		start := rec.Now()
		defer func() {
			rec.Add(trace.Event{Start: start, Dur: rec.Now() - start, Arg: uint64(num), Track: trace.TrackPages,
				Stage: trace.PageRead})
		}()
	}
	start, end, err := p.r.PageRange(uint64(num))
	if err != nil {
		pg.err = err
		return
	}
	t0 := time.Now()
	n, err := p.r.ReadAt(pg.buf[:end-start], int64(start))
	// Not under mu: drop waits, holding it, for this read to end.
	if k := p.r.ShardAt(start); k < len(p.shardBytes) {
		p.shardBytes[k].Add(uint64(n))
		p.shardNs[k].Add(int64(time.Since(t0)))
	}
	if err != nil {
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
		p.readAhead()
	}
	p.cond.Broadcast()
}

// Stats returns the counters.
func (p *Process) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.ShardPages = slices.Clone(s.ShardPages)
	s.ShardBytes, s.ShardReadNs = make([]uint64, len(p.shardBytes)), make([]int64, len(p.shardNs))
	for k := range p.shardBytes {
		s.ShardBytes[k], s.ShardReadNs[k] = p.shardBytes[k].Load(), p.shardNs[k].Load()
	}
	return s
}

// Close wakes blocked callers and refuses new ones; the pages stay until Free.
func (p *Process) Close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Free gives every buffer back to the pool, once nothing reads the pages any
// more (the workers have exited). A read still in flight (a stalled server)
// does not hold up the end of an epoch: its buffer goes back when it ends.
func (p *Process) Free() {
	p.mu.Lock()
	pages, free := p.pages, p.free
	p.pages, p.free, p.closed = map[int64]*page{}, nil, true
	p.mu.Unlock()
	for _, b := range free {
		p.pool.put(b)
	}
	for _, pg := range pages {
		if pg.buf == nil {
			continue
		}
		select {
		case <-pg.loaded:
			p.pool.put(pg.buf)
		default:
			go func(pg *page) {
				<-pg.loaded
				p.pool.put(pg.buf)
			}(pg)
		}
	}
}
