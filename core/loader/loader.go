// Package loader runs epochs: it orders the samples, schedules their reads,
// decodes them with worker goroutines straight into batch slots, and hands
// batches out in order with bounded read-ahead.
package loader

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/cache"
	"github.com/ffcv-go/ffcv-go/core/order"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/procs"
	"github.com/ffcv-go/ffcv-go/core/remote"
	"github.com/ffcv-go/ffcv-go/core/trace"
)

var errStopped = errors.New("iterator closed")

// Config holds a loader's settings, with FFCV's meaning.
type Config struct {
	BatchSize    int
	Workers      int // < 1: the CPUs this process may use
	BatchesAhead int
	DropLast     bool
	Seed         uint64
	Order        string   // "sequential", "sequential_contiguous", "random", "quasi_random", "bucketed" or "rect"
	Indices      []uint64 // nil: every sample
	Rank, World  int      // World 0 or 1: not distributed
	OSCache      bool
	// Process cache: resident page bound (0: a default from the workers and
	// read-ahead, plus QUASI_RANDOM's window of open pages).
	MaxResidentPages int
	// QuasiWindow is the number of open pages of QUASI_RANDOM (0: 2 × BatchSize).
	QuasiWindow int
	// The bucketed order's (order.Bucketing): batches of at most BatchSize
	// samples and MaxDuration total duration, from NumBuckets duration
	// buckets, the durations read from DurationField (see Durations).
	DurationField string
	MaxDuration   float64
	NumBuckets    int
	// SkipErrors leaves bad samples out of their batch instead of failing it.
	SkipErrors bool
	// MaxBatchMemory bounds the slot memory when callers hold batches (0: 16 GiB).
	MaxBatchMemory int64
	// Trace times the workers' stages (trace.Stages) and keeps their spans
	// for Trace (trace.Events); trace.Off, the zero value, times nothing.
	Trace trace.Mode
	// Mixture, when not nil, makes the reader's samples the sources of a
	// mixture (in order, without overlap): every epoch takes Take samples
	// of each part, ordered by order.Mix, and Stats count each source.
	// Indices must then be nil.
	Mixture []order.Part
	// SourcePrograms replaces, for a mixture, an output's program on some
	// sources' samples: SourcePrograms[k][s], when not nil, runs instead of
	// output k's program on the samples of source s. It reads the same
	// field, gives the same per-sample output and has no batch operations
	// (output k's run on the whole batch); no other output may read its
	// field (views share the field's decoding).
	SourcePrograms [][]*pipeline.Program
}

// Loader is a configured pipeline over one file. It is safe for concurrent use;
// several iterators may run at once.
type Loader struct {
	r     *beton.Reader
	cfg   Config
	progs []*pipeline.Program
	pool  *slotPool
	bufs  *cache.Pages    // buffers of the epochs' process caches
	rec   *trace.Recorder // nil unless Config.Trace
	// staged[k] is the slot buffer program k's per-sample part writes to:
	// its output buffer, or a staging buffer its batch operations read.
	staged []int
	// shardSource is the mixture source of each of the reader's shards
	// (files); nil unless Config.Mixture.
	shardSource []int
	// The bucketed order's settings and every sample's duration (by id);
	// nil for the other orders.
	bucketing *order.Bucketing
	durations []float64
	// Every sample's image aspect (height / width) for the rect order; nil
	// for the others.
	aspects []float64

	mu      sync.Mutex
	iters   map[*Iterator]struct{}
	closed  bool
	epochs  []EpochStats  // under mu
	sources []SourceStats // under mu: the mixture's sources' counters of finished epochs
	skipped atomic.Uint64
	peak    atomic.Int64
	pages   atomic.Uint64
}

// New builds a loader. progs are the outputs, in order.
func New(r *beton.Reader, cfg Config, progs []*pipeline.Program) (*Loader, error) {
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("batch_size %d must be positive", cfg.BatchSize)
	}
	if cfg.BatchesAhead < 0 {
		return nil, fmt.Errorf("batches_ahead %d must not be negative", cfg.BatchesAhead)
	}
	if cfg.World < 1 {
		cfg.World = 1
	}
	if cfg.Rank < 0 || cfg.Rank >= cfg.World {
		return nil, fmt.Errorf("rank %d out of range for world size %d", cfg.Rank, cfg.World)
	}
	if cfg.Workers < 1 {
		cfg.Workers = procs.CPUs()
	}
	switch cfg.Order {
	case "sequential", "sequential_contiguous", "random", "quasi_random", "bucketed", "rect":
	default:
		return nil, fmt.Errorf("unknown order %q", cfg.Order)
	}
	if cfg.OSCache && !r.Mapped() {
		_, err := r.Data()
		return nil, fmt.Errorf("os_cache=True reads through a memory map: %w", err)
	}
	for _, i := range cfg.Indices {
		if i >= r.NumSamples() {
			return nil, fmt.Errorf("index %d out of range: the file has %d samples", i, r.NumSamples())
		}
	}
	shardSource, err := mixtureShards(r, cfg)
	if err != nil {
		return nil, err
	}
	if err := checkSourcePrograms(r, cfg, progs); err != nil {
		return nil, err
	}

	if cfg.MaxBatchMemory <= 0 {
		cfg.MaxBatchMemory = 16 << 30
	}
	if cfg.QuasiWindow <= 0 {
		cfg.QuasiWindow = 2 * cfg.BatchSize
	}
	if cfg.MaxResidentPages <= 0 {
		cfg.MaxResidentPages = 2*cfg.Workers + 4*(cfg.BatchesAhead+1)
		if cfg.Order == "quasi_random" {
			// QUASI_RANDOM reads every page once only if its open pages stay
			// resident: FFCV's memory use for it too (window × page size).
			ps := r.PageSize()
			cfg.MaxResidentPages += int(min(uint64(cfg.QuasiWindow), (r.Header.AllocTablePtr+ps-1)/ps))
		}
	}
	// One buffer per output, one for the batch's sample ids, then staging
	// buffers for the per-sample results of programs with batch operations.
	sizes := make([]int, len(progs)+1)
	for k, p := range progs {
		sizes[k] = cfg.BatchSize * p.Out.Bytes()
	}
	sizes[len(progs)] = cfg.BatchSize * 8
	pipeline.ShareViews(progs)
	l := &Loader{r: r, cfg: cfg, progs: progs, iters: map[*Iterator]struct{}{}, staged: make([]int, len(progs)),
		shardSource: shardSource}
	if cfg.Mixture != nil {
		l.sources = make([]SourceStats, len(cfg.Mixture))
	}
	if cfg.Order == "bucketed" {
		if err := l.newBucketing(); err != nil {
			return nil, err
		}
	}
	if cfg.Order == "rect" {
		if err := l.newRect(); err != nil {
			return nil, err
		}
	}
	for k, p := range progs {
		l.staged[k] = k
		if p.HasBatchOps() {
			l.staged[k] = len(sizes)
			sizes = append(sizes, cfg.BatchSize*p.SampleOut.Bytes())
		}
	}
	l.pool = newSlotPool(sizes, cfg.BatchesAhead+2, cfg.MaxBatchMemory)
	l.bufs = cache.NewPages(int(r.PageSize()))
	l.rec = trace.New(cfg.Trace, 0)
	return l, nil
}

// Trace moves up to len(dst) recorded spans into dst (see trace.Recorder.Drain)
// and returns their number; a loader without Config.Trace = trace.Events has
// none. Workers hand theirs over every few hundred samples and at the end of
// their epoch.
func (l *Loader) Trace(dst []trace.Event) int { return l.rec.Drain(dst) }

// TracePending is the number of spans Trace would return with room for all.
func (l *Loader) TracePending() int { return l.rec.Pending() }

// Reader is the loader's file.
func (l *Loader) Reader() *beton.Reader { return l.r }

// Outputs are the per-sample specs of the outputs.
func (l *Loader) Outputs() []pipeline.Spec {
	out := make([]pipeline.Spec, len(l.progs))
	for k, p := range l.progs {
		out[k] = p.Out
	}
	return out
}

// SlotBytes is the batch memory of each output.
func (l *Loader) SlotBytes() []int { return l.pool.sizes[:len(l.progs)] }

// NumSamples is the number of samples an epoch visits on this rank.
func (l *Loader) NumSamples() int {
	return (l.numIndices() + l.cfg.World - 1) / l.cfg.World
}

func (l *Loader) numIndices() int {
	if l.cfg.Mixture != nil {
		n := 0
		for _, p := range l.cfg.Mixture {
			n += int(p.Take)
		}
		return n
	}
	if l.cfg.Indices == nil {
		return int(l.r.NumSamples())
	}
	return len(l.cfg.Indices)
}

// indices returns the samples the loader draws from: Config.Indices, or
// every sample (enumerated per epoch rather than held, for huge files).
func (l *Loader) indices() []uint64 {
	if l.cfg.Indices != nil {
		return l.cfg.Indices
	}
	all := make([]uint64, l.r.NumSamples())
	for i := range all {
		all[i] = uint64(i)
	}
	return all
}

// Len is the number of batches per epoch for n samples.
func (l *Loader) Len(n int) int {
	if l.cfg.DropLast {
		return n / l.cfg.BatchSize
	}
	return (n + l.cfg.BatchSize - 1) / l.cfg.BatchSize
}

func (l *Loader) pageOf(id uint64) uint32 {
	p := cache.PageOf(l.r, id)
	if p < 0 {
		return 0
	}
	return uint32(p)
}

// GlobalOrder is the epoch's order over all ranks, before distribution.
func (l *Loader) GlobalOrder(epoch uint64) ([]uint64, error) {
	return l.GlobalOrderAs(epoch, l.cfg.Order, l.cfg.QuasiWindow)
}

// GlobalOrderAs is the epoch's global order under another order name or
// QUASI_RANDOM window (0: the loader's own) over the same samples and
// seed: a run resumed with other settings rebuilds the saving run's order.
func (l *Loader) GlobalOrderAs(epoch uint64, name string, window int) ([]uint64, error) {
	if window <= 0 {
		window = l.cfg.QuasiWindow
	}
	if l.cfg.Mixture != nil {
		if name == "sequential_contiguous" { // the same order, cut in blocks (Layout)
			name = "sequential"
		}
		return order.Mix(l.cfg.Mixture, name, l.pageOf, window, l.cfg.Seed, epoch)
	}
	switch name {
	case "bucketed":
		if l.bucketing == nil {
			return nil, fmt.Errorf("the bucketed order needs a loader made with it (its durations)")
		}
		ord, _ := flatten(l.GlobalBatches(epoch))
		return ord, nil
	case "rect":
		if l.aspects == nil {
			return nil, fmt.Errorf("the rect order needs a loader made with it (its images' aspects)")
		}
		return order.Rect(l.indices(), func(id uint64) float64 { return l.aspects[id] }), nil
	case "random":
		return order.Random(l.indices(), l.cfg.Seed+epoch), nil
	case "quasi_random":
		return order.QuasiRandom(l.indices(), l.pageOf, window, l.cfg.Seed+epoch), nil
	case "sequential", "sequential_contiguous":
		if l.cfg.Indices == nil {
			return l.indices(), nil // already a fresh slice
		}
		return order.Sequential(l.cfg.Indices), nil
	}
	return nil, fmt.Errorf("unknown order %q", name)
}

// QuasiWindow is the QUASI_RANDOM window in effect (its default is 2 × batch size).
func (l *Loader) QuasiWindow() int { return l.cfg.QuasiWindow }

// Layout is how a fresh epoch is cut over the ranks (see Distribute):
// QUASI_RANDOM and SEQUENTIAL_CONTIGUOUS (FFCV-SSL's order: the indices as
// given, its DistributedSamplerProxy's contiguous blocks) in blocks, the
// bucketed order in whole batches (order.DealBatches).
func (l *Loader) Layout() order.Layout {
	if l.bucketing != nil {
		return order.Batched
	}
	if l.cfg.Order == "quasi_random" || l.cfg.Order == "sequential_contiguous" {
		return order.Blocked
	}
	return order.Strided
}

// Resume is this rank's list of rest, what earlier runs left of an epoch
// (see order.Remaining), cut with the loader's world size, batch size and
// drop_last.
func (l *Loader) Resume(rest []uint64) []uint64 {
	return order.Resume(rest, l.cfg.Rank, l.cfg.World, l.cfg.BatchSize, l.cfg.DropLast)
}

// Distribute takes this rank's share of a global order: strided as
// DistributedSampler does, or in contiguous blocks (Layout) so that each
// rank keeps QUASI_RANDOM's page locality, or as SEQUENTIAL_CONTIGUOUS says.
func (l *Loader) Distribute(global []uint64) []uint64 {
	if l.cfg.World == 1 {
		return global
	}
	if l.Layout() == order.Blocked {
		return order.Block(global, l.cfg.Rank, l.cfg.World)
	}
	return order.Distribute(global, l.cfg.Rank, l.cfg.World)
}

// Stats are a loader's counters. Requests, BytesFetched and Retries count
// the requests to remote files (s3://, http(s)://) since they were opened,
// the open's own included; Epochs has what each epoch (each iterator, when
// closed) read, most recent last, at most maxEpochStats of them.
type Stats struct {
	SamplesSkipped    uint64       `json:"samples_skipped"`
	PeakResidentPages int64        `json:"peak_resident_pages"`
	PagesRead         uint64       `json:"pages_read"`
	Slots             int          `json:"slots"`
	SlotsGrown        int          `json:"slots_grown"`
	Requests          uint64       `json:"requests"`
	BytesFetched      uint64       `json:"bytes_fetched"`
	Retries           uint64       `json:"retries"`
	PeakInFlight      int64        `json:"peak_in_flight"`
	Epochs            []EpochStats `json:"epochs"`
	// Sources sums the epochs' SourceStats of a mixture (finished epochs).
	Sources []SourceStats `json:"sources,omitempty"`
	// Stages is the time the workers spent in each stage (see package
	// trace), when the loader traces; TraceDropped the spans not kept.
	Stages       map[string]trace.Total `json:"stages,omitempty"`
	TraceDropped uint64                 `json:"trace_dropped,omitempty"`
	// Ops is each output's per-sample operations and their time, when the
	// loader traces.
	Ops [][]trace.OpTotal `json:"ops,omitempty"`
}

// EpochStats is what one epoch read: pages loaded by the process cache and,
// for remote files, the requests (retries included), body bytes and retries
// that took. Exact when epochs run one at a time; concurrent iterators over
// one remote file each count the other's requests too.
type EpochStats struct {
	Epoch        uint64 `json:"epoch"`
	PagesRead    uint64 `json:"pages_read"`
	Requests     uint64 `json:"requests"`
	BytesFetched uint64 `json:"bytes_fetched"`
	Retries      uint64 `json:"retries"`
	// Sources has a mixture's counters by source.
	Sources []SourceStats `json:"sources,omitempty"`
}

const maxEpochStats = 1000

// Stats returns the counters.
func (l *Loader) Stats() Stats {
	rq := remoteStats(l.r)
	l.mu.Lock()
	epochs := append([]EpochStats{}, l.epochs...)
	sources := slices.Clone(l.sources)
	l.mu.Unlock()
	l.pool.mu.Lock()
	defer l.pool.mu.Unlock()
	return Stats{
		SamplesSkipped: l.skipped.Load(), PeakResidentPages: l.peak.Load(), PagesRead: l.pages.Load(),
		Slots: l.pool.total, SlotsGrown: l.pool.grown,
		Requests: rq.Requests, BytesFetched: rq.Bytes, Retries: rq.Retries, PeakInFlight: rq.PeakInFlight,
		Epochs: epochs, Sources: sources, Stages: l.rec.Totals(), TraceDropped: l.rec.Dropped(), Ops: l.opTotals(),
	}
}

// opTotals is each output's time per operation (nil when not tracing).
func (l *Loader) opTotals() [][]trace.OpTotal {
	if l.rec == nil {
		return nil
	}
	out := make([][]trace.OpTotal, len(l.progs))
	for k, p := range l.progs {
		out[k] = p.OpTotals()
	}
	return out
}

// remoteStats sums the request counters of r's remote objects: r's own
// source, or its shards'. Local files have none.
func remoteStats(r *beton.Reader) remote.Stats {
	readers := r.Shards()
	if readers == nil {
		readers = []*beton.Reader{r}
	}
	var s remote.Stats
	for _, x := range readers {
		if o, ok := x.Source().(*remote.Object); ok {
			st := o.Stats()
			s.Requests += st.Requests
			s.Bytes += st.Bytes
			s.Retries += st.Retries
			s.PeakInFlight = max(s.PeakInFlight, st.PeakInFlight)
		}
	}
	return s
}

// Close stops every iterator and frees the slots nobody holds; held slots are
// freed when released. The reader is not closed.
func (l *Loader) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	iters := make([]*Iterator, 0, len(l.iters))
	for it := range l.iters {
		iters = append(iters, it)
	}
	l.mu.Unlock()
	for _, it := range iters {
		it.Close()
	}
	l.pool.close()
	l.bufs.Close()
	return nil
}
