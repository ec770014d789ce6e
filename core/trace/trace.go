// Package trace records where a loader's time goes: how long each worker
// spends on each stage of a sample (reading its bytes, entropy decoding,
// the rest of decoding, the operations after the decoder), the process
// cache's page reads, and batch operations. A Recorder sums the stages
// and, in Events mode, keeps every span for a Chrome/Perfetto trace.
//
// A loader without tracing holds a nil *Recorder and its workers a nil
// *Buffer: the cost of tracing off is one nil check per sample.
package trace

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Stage is what a span measures. The values are the C ABI's FFCV_STAGE_*.
type Stage int32

const (
	// Read is getting a sample's bytes: the cache lookup, waiting for the
	// process cache's page, and copying the bytes out of the file's map,
	// where the page faults of the OS cache land.
	Read Stage = iota
	// Entropy is JPEG entropy (Huffman) decoding.
	Entropy
	// Decode is the rest of decoding and resizing: IDCT, upsampling,
	// colour conversion, crop and resize (for raw images the crop and
	// resize, for other fields their decoder).
	Decode
	// Ops is the built-in per-sample operations after the decoder.
	Ops
	// PageRead is one page read by the process cache, on a goroutine of
	// its own (track TrackPages).
	PageRead
	// BatchOps is the batch operations of a finished batch (track
	// TrackBatch).
	BatchOps
	// NumStages is the number of stages.
	NumStages
)

var stageNames = [NumStages]string{"read", "entropy_decode", "idct_resize", "ops", "page_read", "batch_ops"}

// String is the stage's name in stats and traces.
func (s Stage) String() string {
	if s < 0 || s >= NumStages {
		return fmt.Sprintf("stage%d", int32(s))
	}
	return stageNames[s]
}

// Tracks of the spans that no worker records.
const (
	TrackPages int32 = -1 // the process cache's page reads
	TrackBatch int32 = -2 // batch operations
)

// Event is one span, laid out as the C ABI's ffcv_trace_event.
type Event struct {
	Start int64  // ns on CLOCK_MONOTONIC (Python's time.monotonic_ns)
	Dur   int64  // ns
	Arg   uint64 // the sample; the page of a PageRead; the batch of BatchOps
	Track int32  // the worker, or TrackPages, TrackBatch
	Stage Stage
}

// Mode is what a Recorder keeps.
type Mode int

const (
	// Off records nothing: a loader has no Recorder.
	Off Mode = iota
	// Stages sums the time of each stage.
	Stages
	// Events also keeps every span until Drain takes it.
	Events
)

// ParseMode reads a mode's name: "" or "off", "stages", "events".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "off":
		return Off, nil
	case "stages":
		return Stages, nil
	case "events":
		return Events, nil
	}
	return Off, fmt.Errorf("trace mode %q: want \"off\", \"stages\" or \"events\"", s)
}

// Total is the time spent in one stage and the number of spans.
type Total struct {
	Ns    int64 `json:"ns"`
	Count int64 `json:"count"`
}

// DefaultMaxEvents bounds the spans a Recorder holds before Drain takes
// them (32 bytes each): later ones are counted as dropped.
const DefaultMaxEvents = 4 << 20

// Recorder collects the spans and totals of one loader. Its methods are
// safe for concurrent use; a nil *Recorder records nothing.
type Recorder struct {
	mode      Mode
	base      time.Time
	baseNs    int64 // CLOCK_MONOTONIC at base
	maxEvents int

	mu      sync.Mutex
	totals  [NumStages]Total
	events  []Event
	dropped uint64
}

// New returns a Recorder for mode Stages or Events (nil for Off), holding
// at most maxEvents spans (<= 0: DefaultMaxEvents).
func New(mode Mode, maxEvents int) *Recorder {
	if mode == Off {
		return nil
	}
	if maxEvents <= 0 {
		maxEvents = DefaultMaxEvents
	}
	var ts unix.Timespec
	r := &Recorder{mode: mode, maxEvents: maxEvents}
	// Go's monotonic clock is CLOCK_MONOTONIC: spans are base plus Go's
	// durations, comparable with the caller's own monotonic timestamps.
	// The clock is read by a system call (about a microsecond): base is the
	// middle of the Go readings around it, the tightest of a few tries (a
	// thread descheduled in between would widen one).
	best := time.Duration(-1)
	for try := 0; try < 8; try++ {
		t1 := time.Now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			break
		}
		t2 := time.Now()
		if d := t2.Sub(t1); best < 0 || d < best {
			best, r.base, r.baseNs = d, t1.Add(d/2), ts.Nano()
		}
	}
	if best < 0 {
		r.base = time.Now()
	}
	return r
}

// Mode is what r keeps (Off for a nil r).
func (r *Recorder) Mode() Mode {
	if r == nil {
		return Off
	}
	return r.mode
}

// Now is the current time on the spans' clock.
func (r *Recorder) Now() int64 { return r.baseNs + int64(time.Since(r.base)) }

// Add records one span directly (page reads, batch operations: rare enough
// not to need a Buffer).
func (r *Recorder) Add(ev Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.totals[ev.Stage].Ns += ev.Dur
	r.totals[ev.Stage].Count++
	r.keep(ev)
	r.mu.Unlock()
}

// keep holds ev for Drain in Events mode; called with mu held.
func (r *Recorder) keep(ev Event) {
	if r.mode != Events {
		return
	}
	if len(r.events) >= r.maxEvents {
		r.dropped++
		return
	}
	r.events = append(r.events, ev)
}

// Totals is the time spent in each stage so far, by stage name (stages
// with no span left out). Spans still in a worker's Buffer are not in it.
func (r *Recorder) Totals() map[string]Total {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]Total{}
	for s, t := range r.totals {
		if t.Count > 0 {
			out[Stage(s).String()] = t
		}
	}
	return out
}

// Dropped is the number of spans not kept because maxEvents were waiting.
func (r *Recorder) Dropped() uint64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// Pending is the number of spans waiting for Drain.
func (r *Recorder) Pending() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Drain moves up to len(dst) waiting spans, oldest first, into dst and
// returns their number.
func (r *Recorder) Drain(dst []Event) int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := copy(dst, r.events)
	rest := copy(r.events, r.events[n:])
	clear(r.events[rest:])
	r.events = r.events[:rest]
	if rest == 0 && cap(r.events) > 1<<16 {
		r.events = nil // give a big backlog's memory back
	}
	return n
}

// Times is one sample's time per stage, in ns (Read, Entropy, Decode, Ops).
type Times [NumStages]int64

// flushEvery is how many samples a Buffer holds before it hands them over.
const flushEvery = 256

// Buffer is one worker's: it lays out each sample's stages as consecutive
// spans and hands them to the Recorder in groups, so workers do not
// contend for it. A Buffer belongs to one goroutine; a nil *Buffer records
// nothing.
type Buffer struct {
	r       *Recorder
	track   int32
	samples int
	totals  [NumStages]Total
	events  []Event
	ops     OpTimes
}

// Buffer returns a worker's Buffer for track (nil for a nil r).
func (r *Recorder) Buffer(track int32) *Buffer {
	if r == nil {
		return nil
	}
	return &Buffer{r: r, track: track}
}

// Now is the current time on the spans' clock.
func (b *Buffer) Now() int64 { return b.r.Now() }

// Ops is the worker's time per operation, handed over with its spans (nil
// for a nil b).
func (b *Buffer) Ops() *OpTimes {
	if b == nil {
		return nil
	}
	return &b.ops
}

// Sample records sample id's stages, which started at start: spans of the
// stages it spent time in, one after the other in the order Read, Entropy,
// Decode, Ops. (Entropy decoding and the rest of decoding alternate MCU by
// MCU; the spans show their sums.)
func (b *Buffer) Sample(id uint64, start int64, t *Times) {
	at := start
	for s := Read; s <= Ops; s++ {
		d := t[s]
		if d <= 0 {
			continue
		}
		b.totals[s].Ns += d
		b.totals[s].Count++
		if b.r.mode == Events {
			b.events = append(b.events, Event{Start: at, Dur: d, Arg: id, Track: b.track, Stage: s})
		}
		at += d
	}
	b.samples++
	if b.samples >= flushEvery {
		b.Flush()
	}
}

// Flush hands the buffered spans and totals to the Recorder.
func (b *Buffer) Flush() {
	if b == nil || b.samples == 0 {
		return
	}
	r := b.r
	r.mu.Lock()
	for s := range b.totals {
		r.totals[s].Ns += b.totals[s].Ns
		r.totals[s].Count += b.totals[s].Count
	}
	for _, ev := range b.events {
		r.keep(ev)
	}
	r.mu.Unlock()
	b.ops.Flush()
	b.totals = [NumStages]Total{}
	clear(b.events)
	b.events = b.events[:0]
	b.samples = 0
}
