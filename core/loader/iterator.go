package loader

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ffcv-go/ffcv-go/core/cache"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/procs"
	"github.com/ffcv-go/ffcv-go/core/remote"
	"github.com/ffcv-go/ffcv-go/core/trace"
)

// Iterator runs one epoch. Next returns batches in order; Close (or reaching
// the end) stops its goroutines.
type Iterator struct {
	l      *Loader
	epoch  uint64
	order  []uint64 // this rank's samples, in visiting order
	bounds []int    // batch b is order[bounds[b]:bounds[b+1]]
	nb     int
	src    cache.Source
	seed   uint64
	io0    remote.Stats // the remote counters when the epoch started
	stop   chan struct{}
	jobs   chan job
	wg     sync.WaitGroup
	closed sync.Once

	// A mixture's: each file's remote counters when the epoch started, and
	// the samples of each source handed out (under nextMu).
	shardIO0   []remote.Stats
	srcSamples []uint64

	nextMu  sync.Mutex // serialises Next: each batch is handed out once
	mu      sync.Mutex
	cond    *sync.Cond
	next    int   // next batch Next returns
	fatal   error // set when the scheduler stopped early: no later batch will come
	batches map[int]*batch
}

type batch struct {
	index   int
	slot    *slot
	n       int // samples in the batch
	pending atomic.Int32
	done    chan struct{}
	mu      sync.Mutex
	bad     []sampleError
	err     error
}

type sampleError struct {
	pos int
	err error
}

type job struct {
	b      *batch
	lo, hi int // positions in the batch
}

// Batch is a finished batch: N samples in each output buffer. The caller owns
// one reference to its slot per Share and releases each with Release.
type Batch struct {
	Index int
	N     int
	Bufs  [][]byte
	slot  *slot
}

// Share adds n references to the batch's memory (one per tensor handed out).
func (b *Batch) Share(n int) { b.slot.refs.Add(int32(n)) }

// Release drops one reference; the slot is reused after the last.
func (b *Batch) Release() { b.slot.Release() }

// Start begins epoch at batch startBatch. If order is nil the loader's own
// order for the epoch is used; otherwise order is the epoch's order, taken as
// is (perRank) or distributed over the ranks first. A bucketed loader takes
// only this rank's order (an elastic resume's rest, see ResumeBatches),
// cut into the epoch's batches again.
func (l *Loader) Start(epoch uint64, startBatch int, ord []uint64, perRank bool) (*Iterator, error) {
	var bounds []int
	if ord == nil {
		var err error
		if ord, bounds, err = l.RankOrder(epoch); err != nil {
			return nil, fmt.Errorf("epoch %d: %w", epoch, err)
		}
	} else {
		for _, i := range ord {
			if i >= l.r.NumSamples() {
				return nil, fmt.Errorf("order names sample %d; the file has %d", i, l.r.NumSamples())
			}
		}
		switch {
		case l.bucketing != nil:
			if !perRank {
				return nil, fmt.Errorf("a bucketed order is dealt to the ranks in Go: give this rank's order")
			}
			var err error
			if bounds, err = l.splitBatches(epoch, ord); err != nil {
				return nil, fmt.Errorf("epoch %d: %w", epoch, err)
			}
		case !perRank:
			ord = l.Distribute(ord)
		}
	}
	if bounds == nil {
		bounds = l.fixedBounds(len(ord))
	}
	it := &Iterator{
		l: l, epoch: epoch, order: ord, bounds: bounds, nb: len(bounds) - 1,
		seed: mixSeed(l.cfg.Seed, uint64(l.cfg.Rank)),
		stop: make(chan struct{}), jobs: make(chan job, 2*l.cfg.Workers),
		batches: map[int]*batch{}, next: startBatch,
	}
	if startBatch < 0 || startBatch > it.nb {
		return nil, fmt.Errorf("start batch %d out of range [0, %d]", startBatch, it.nb)
	}
	it.cond = sync.NewCond(&it.mu)
	it.io0 = remoteStats(l.r)
	if l.cfg.Mixture != nil {
		it.shardIO0 = remoteByShard(l.r)
		it.srcSamples = make([]uint64, len(l.cfg.Mixture))
	}
	if l.cfg.OSCache {
		o, err := cache.NewOS(l.r)
		if err != nil {
			return nil, err
		}
		it.src = o
	} else {
		p, err := cache.NewProcess(l.r, l.cfg.MaxResidentPages, l.bufs)
		if err != nil {
			return nil, err
		}
		p.Trace(l.rec)
		it.src = p
	}
	it.src.Plan(ord[bounds[startBatch]:bounds[it.nb]])
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		it.src.Close()
		it.src.Free()
		return nil, fmt.Errorf("loader is closed")
	}
	l.iters[it] = struct{}{}
	l.mu.Unlock()
	// The workers spend their time in C calls: keep a P idle beside them.
	release := procs.Add(l.cfg.Workers)
	var workers sync.WaitGroup
	for w := 0; w < l.cfg.Workers; w++ {
		it.wg.Add(1)
		workers.Add(1)
		go func() {
			defer workers.Done()
			it.work(int32(w))
		}()
	}
	go func() {
		workers.Wait()
		release()
	}()
	it.wg.Add(1)
	go it.schedule(startBatch)
	return it, nil
}

func mixSeed(seed, rank uint64) uint64 {
	if rank == 0 {
		return seed
	}
	return seed ^ (rank * 0x9e3779b97f4a7c15)
}

// Len is the number of batches in this epoch.
func (it *Iterator) Len() int { return it.nb }

// Order is this epoch's sample order on this rank.
func (it *Iterator) Order() []uint64 { return it.order }

func (it *Iterator) stopped() bool {
	select {
	case <-it.stop:
		return true
	default:
		return false
	}
}

// schedule creates batches in order, at most BatchesAhead+1 beyond the
// consumer, acquiring their samples' pages and queueing decode jobs.
func (it *Iterator) schedule(start int) {
	panicOnFault()
	defer it.wg.Done()
	defer close(it.jobs)
	bs := it.l.cfg.BatchSize
	chunk := max(1, min(32, bs/(2*it.l.cfg.Workers)))
	for b := start; b < it.nb; b++ {
		it.mu.Lock()
		for b > it.next+it.l.cfg.BatchesAhead && !it.stopped() {
			it.cond.Wait()
		}
		it.mu.Unlock()
		if it.stopped() {
			return
		}
		s, err := it.l.pool.get(it.stop)
		if err != nil {
			// No memory for this batch: it and every later one fail.
			it.mu.Lock()
			it.fatal = err
			it.cond.Broadcast()
			it.mu.Unlock()
			return
		}
		bt := &batch{index: b, done: make(chan struct{}), slot: s, n: it.bounds[b+1] - it.bounds[b]}
		bt.pending.Store(1) // the scheduler's own hold, dropped below
		it.publish(bt)
		lo := 0
		for pos := 0; pos < bt.n; pos++ {
			id := it.order[it.bounds[b]+pos]
			var ok bool
			err := it.guarded(id, func() (e error) { ok, e = it.src.TryAcquire(id); return e })
			if err == nil && !ok {
				// Out of cache room: let workers finish what is held first.
				if pos > lo {
					it.queue(job{bt, lo, pos})
					lo = pos
				}
				err = it.guarded(id, func() error { return it.src.Acquire(id) })
			}
			if err != nil {
				if it.stopped() {
					return
				}
				bt.fail(pos, err)
			}
			if pos+1-lo >= chunk {
				it.queue(job{bt, lo, pos + 1})
				lo = pos + 1
			}
		}
		if lo < bt.n {
			it.queue(job{bt, lo, bt.n})
		}
		if bt.pending.Add(-1) == 0 {
			it.finish(bt)
		}
	}
}

func (it *Iterator) queue(j job) {
	j.b.pending.Add(1)
	select {
	case it.jobs <- j:
	case <-it.stop:
		it.drop(j)
	}
}

func (it *Iterator) publish(b *batch) {
	it.mu.Lock()
	it.batches[b.index] = b
	it.cond.Broadcast()
	it.mu.Unlock()
}

func (b *batch) fail(pos int, err error) {
	b.mu.Lock()
	b.bad = append(b.bad, sampleError{pos, err})
	b.mu.Unlock()
}

// work decodes jobs' samples into their slots; w is the worker's number,
// its track in traces.
func (it *Iterator) work(w int32) {
	panicOnFault()
	defer it.wg.Done()
	ctx := pipeline.NewCtx()
	defer ctx.Close()
	scratch := make([]pipeline.Scratch, len(it.l.progs))
	ctx.Seed, ctx.Epoch = it.seed, it.epoch
	ctx.Read = func(f int) ([]byte, []byte, error) { return it.src.Read(ctx.Sample, f) }
	tb := it.l.rec.Buffer(w) // nil when not tracing
	if tb != nil {
		defer tb.Flush()
		ctx.Times = new(trace.Times)
		ctx.OpTimes = tb.Ops()
	}
	for j := range it.jobs {
		if it.stopped() {
			it.drop(j)
			continue
		}
		for pos := j.lo; pos < j.hi; pos++ {
			gpos := it.bounds[j.b.index] + pos
			id := it.order[gpos]
			var start int64
			if tb != nil {
				*ctx.Times = trace.Times{}
				start = tb.Now()
			}
			if err := it.decode(ctx, scratch, j.b, pos, uint64(gpos), id); err != nil {
				j.b.fail(pos, err)
			}
			if tb != nil {
				tb.Sample(id, start, ctx.Times)
			}
			it.release(id)
			runtime.Gosched() // a schedule tick per sample (see package procs)
		}
		if j.b.pending.Add(-1) == 0 {
			it.finish(j.b)
		}
	}
}

// drop gives up a job when the iterator stops: its samples are never decoded,
// so they are marked failed and the batch is never handed out.
func (it *Iterator) drop(j job) {
	for pos := j.lo; pos < j.hi; pos++ {
		j.b.fail(pos, errStopped)
		it.release(it.order[it.bounds[j.b.index]+pos])
	}
	if j.b.pending.Add(-1) == 0 {
		it.finish(j.b)
	}
}

// decode runs every output's program for one sample, recovering panics so a
// bug or a hostile file fails the sample, not the process.
func (it *Iterator) decode(ctx *pipeline.Ctx, scratch []pipeline.Scratch, b *batch, pos int, gpos, id uint64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = sampleFailure(it.l.r.Where(id), r)
		}
	}()
	ctx.Sample, ctx.Pos = id, gpos
	src := 0
	if it.l.cfg.SourcePrograms != nil {
		src = it.l.SourceOf(id)
	}
	for k := range it.l.progs {
		p := it.l.program(k, src)
		var t0 time.Time
		if ctx.Times != nil {
			t0 = time.Now()
		}
		col, heap, err := it.src.Read(id, p.Field)
		if ctx.Times != nil {
			ctx.Times[trace.Read] += int64(time.Since(t0))
		}
		if err != nil {
			return fmt.Errorf("%s, field %q: %w", it.l.r.Where(id), it.l.r.Fields[p.Field].Name, err)
		}
		ctx.Col, ctx.Heap = col, heap
		sz := p.SampleOut.Bytes()
		if err := p.Run(ctx, &scratch[k], nil, b.slot.bufs[it.l.staged[k]][pos*sz:(pos+1)*sz]); err != nil {
			return fmt.Errorf("%s, field %q: %w", it.l.r.Where(id), it.l.r.Fields[p.Field].Name, err)
		}
	}
	return nil
}

// finish settles a batch whose samples are all done: it drops or reports bad
// samples and marks the batch ready.
func (it *Iterator) finish(b *batch) {
	ids := b.slot.bufs[len(it.l.progs)]
	for pos := 0; pos < b.n; pos++ {
		binary.LittleEndian.PutUint64(ids[8*pos:], it.order[it.bounds[b.index]+pos])
	}
	if len(b.bad) > 0 {
		sort.Slice(b.bad, func(i, j int) bool { return b.bad[i].pos < b.bad[j].pos })
		if it.l.cfg.SkipErrors && !it.stopped() {
			it.compact(b)
		} else {
			b.err = b.bad[0].err
		}
	}
	if b.err == nil && b.n > 0 {
		b.err = it.runBatchOps(b)
	}
	close(b.done)
}

func (it *Iterator) runBatchOps(b *batch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: batch %d: internal error: %v", it.l.r.Path, b.index, r)
		}
	}()
	bc := &pipeline.BatchCtx{Seed: it.seed, Epoch: it.epoch, Index: uint64(b.index)}
	if rec := it.l.rec; rec != nil && slices.ContainsFunc(it.l.progs, (*pipeline.Program).HasBatchOps) {
		start := rec.Now()
		defer func() {
			rec.Add(trace.Event{Start: start, Dur: rec.Now() - start, Arg: uint64(b.index), Track: trace.TrackBatch,
				Stage: trace.BatchOps})
		}()
	}
	for k, p := range it.l.progs {
		if !p.HasBatchOps() {
			continue
		}
		if err := p.RunBatch(bc, b.slot.bufs[it.l.staged[k]], b.slot.bufs[k], b.n); err != nil {
			return fmt.Errorf("%s: batch %d, field %q: %w", it.l.r.Path, b.index, it.l.r.Fields[p.Field].Name, err)
		}
	}
	return nil
}

// compact moves the good samples of b to the front of each output.
func (it *Iterator) compact(b *batch) {
	bad := map[int]bool{}
	for _, e := range b.bad {
		bad[e.pos] = true
	}
	it.l.skipped.Add(uint64(len(bad)))
	w := 0
	for pos := 0; pos < b.n; pos++ {
		if bad[pos] {
			continue
		}
		if w != pos {
			for k, buf := range b.slot.bufs {
				sz := it.l.pool.sizes[k] / it.l.cfg.BatchSize
				copy(buf[w*sz:(w+1)*sz], buf[pos*sz:(pos+1)*sz])
			}
		}
		w++
	}
	b.n = w
}

// Next waits for the next batch. It returns nil at the end of the epoch. With
// SkipErrors, batches whose samples all failed are passed over.
func (it *Iterator) Next() (*Batch, error) {
	it.nextMu.Lock()
	defer it.nextMu.Unlock()
	for {
		it.mu.Lock()
		if it.next >= it.nb {
			it.mu.Unlock()
			return nil, nil
		}
		idx := it.next
		b := it.batches[idx]
		if b == nil {
			it.l.pool.starve(1)
			for b == nil && !it.stopped() && it.fatal == nil {
				it.cond.Wait()
				b = it.batches[idx]
			}
			it.l.pool.starve(-1)
		}
		if b == nil && it.fatal != nil && !it.stopped() {
			it.next++ // the batch will never come: fail it and move on
			it.mu.Unlock()
			return nil, it.fatal
		}
		it.mu.Unlock()
		if b == nil {
			return nil, errStopped
		}
		select {
		case <-b.done:
		case <-it.stop:
			return nil, errStopped
		}
		if it.stopped() {
			return nil, errStopped // Close releases the batch
		}
		it.mu.Lock()
		if it.batches[idx] != b {
			// Close has taken the batch back (and released its slot).
			it.mu.Unlock()
			return nil, errStopped
		}
		delete(it.batches, idx)
		it.next++
		it.cond.Broadcast()
		it.mu.Unlock()
		if b.err != nil {
			if b.slot != nil {
				b.slot.Release()
			}
			return nil, b.err
		}
		if b.n == 0 {
			b.slot.Release()
			continue
		}
		if it.srcSamples != nil {
			it.l.countSources(b.slot.bufs[len(it.l.progs)], b.n, it.srcSamples)
		}
		return &Batch{Index: idx, N: b.n, Bufs: b.slot.bufs, slot: b.slot}, nil
	}
}

// Close stops the epoch: goroutines exit, batches not handed out go back to
// the pool. Batches already handed out stay valid until released.
func (it *Iterator) Close() error {
	it.closed.Do(func() {
		close(it.stop)
		it.mu.Lock()
		it.cond.Broadcast()
		it.mu.Unlock()
		it.l.pool.wake()
		it.src.Close()
		it.wg.Wait()
		// Every goroutine has exited: nothing reads the cache's pages or
		// writes to these slots any more, finished or not.
		it.src.Free()
		it.mu.Lock()
		for k, b := range it.batches {
			if b.slot != nil {
				b.slot.Release()
			}
			delete(it.batches, k)
		}
		it.mu.Unlock()
		st := it.src.Stats()
		for {
			old := it.l.peak.Load()
			if int64(st.PeakResidentPages) <= old || it.l.peak.CompareAndSwap(old, int64(st.PeakResidentPages)) {
				break
			}
		}
		it.l.pages.Add(st.PagesRead)
		rq := remoteStats(it.l.r).Sub(it.io0)
		es := EpochStats{Epoch: it.epoch, PagesRead: st.PagesRead, Requests: rq.Requests, BytesFetched: rq.Bytes,
			Retries: rq.Retries}
		if it.srcSamples != nil {
			it.nextMu.Lock() // a Next still returning has counted its batch
			es.Sources = it.l.sourceStats(it.srcSamples, st, it.shardIO0)
			it.nextMu.Unlock()
		}
		it.l.mu.Lock()
		delete(it.l.iters, it)
		if len(it.l.epochs) >= maxEpochStats {
			it.l.epochs = it.l.epochs[1:]
		}
		it.l.epochs = append(it.l.epochs, es)
		for k, s := range es.Sources {
			it.l.sources[k].add(s)
		}
		it.l.mu.Unlock()
	})
	return nil
}
