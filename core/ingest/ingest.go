// Package ingest converts a dataset that arrives as an ordered stream of
// samples (webdataset shards, Arrow record batches) into .beton files in
// one pass: sources are read ahead in parallel, samples are encoded by a
// pool of workers and placed in their order, and the files are cut per
// source, at a target size, or not at all. Bad samples are reported with
// their source and key, and skipped or made to fail the write by policy.
// Captions whose tokens come from the caller's tokenizer are handed out in
// batches (Job.Texts) and wait for their tokens (Job.PutTokens) before
// they are encoded.
//
// Which samples are written, where, and with which bytes depends on the
// input alone: never on the number of workers or readers.
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/dataset"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/procs"
)

// Item is one sample of a source: a value per field, and the problems met
// when its values were made (a member no field takes, a missing one).
type Item struct {
	Key      string
	Values   []field.Value
	Problems []Problem
}

// Problem is something wrong with a sample or a shard. Dropped problems
// cost the sample (a missing caption, an image that does not decode, a
// shard cut in it); others cost one of its parts (a member no field
// takes). A shard problem (Shard: missing, refused, not a tar) costs no
// sample of its own: it has no Key. Member is the member the problem is
// in ("" where none is: a missing member, an Arrow row, a shard problem).
type Problem struct {
	Source  string
	Key     string
	Member  string
	Reason  string
	Dropped bool
	Shard   bool
	Err     error // the error behind Reason, if any
}

// problemJSON is a Problem in reports: key and member are null where
// they do not apply.
type problemJSON struct {
	Source  string  `json:"shard"`
	Key     *string `json:"key"`
	Member  *string `json:"member"`
	Reason  string  `json:"reason"`
	Dropped bool    `json:"sample_skipped"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (p Problem) MarshalJSON() ([]byte, error) {
	return json.Marshal(problemJSON{Source: p.Source, Key: orNull(p.Key), Member: orNull(p.Member), Reason: p.Reason, Dropped: p.Dropped})
}

// Unwrap lets errors.Is see the error behind the problem (a missing
// shard is fs.ErrNotExist).
func (p Problem) Unwrap() error { return p.Err }

func (p Problem) Error() string {
	s := p.Source
	if p.Key != "" {
		s += fmt.Sprintf(": sample %q", p.Key)
	}
	if p.Member != "" {
		s += fmt.Sprintf(", member %q", p.Member)
	}
	return s + ": " + p.Reason
}

// ErrBad is wrapped by the error of a write that met a bad sample under
// the policy that fails it.
var ErrBad = errors.New("bad sample")

// ErrShard is wrapped by the error of a write that met a shard it could
// not read at all (missing, refused) under the policy that fails it.
var ErrShard = errors.New("bad shard")

// Source is one input shard. Next returns its samples in order, then
// io.EOF; any other error ends the source. An error that is a Problem
// (errors.As) says what it cost; any other is a shard problem.
type Source interface {
	Name() string
	Next() (*Item, error)
	Close() error
}

// Split says where output files end.
type Split int

const (
	// One writes every sample to one file.
	One Split = iota
	// PerSource writes one file per source (an empty one for a source
	// without good samples).
	PerSource
	// BySize starts a new file once the current one holds Target bytes.
	BySize
)

// Options configure Run.
type Options struct {
	Fields   []field.Desc
	Encoders []field.Encoder
	PageSize uint64
	Workers  int // encoders; < 1: every CPU
	Readers  int // sources read ahead at once; < 1: min(Workers, 4)
	// QueueBytes bounds the samples a source is read ahead by their bytes
	// (and by queueSamples); a larger sample still passes alone. < 1:
	// DefaultQueueBytes.
	QueueBytes int64
	// Name gives output file k: a path or an s3:// URL.
	Name   func(k int) string
	Split  Split
	Target uint64 // BySize's bytes per file
	// Skip drops bad samples (and sources that end in an error, after
	// their good samples), reporting them; otherwise the first fails the
	// write.
	Skip bool
	// Tokenize lists the Text fields whose tokens the caller gives for
	// the captions Job.Texts hands out.
	Tokenize  []int
	TextBatch int // samples per batch of texts; < 1: 256
	Dest      dataset.Options
}

// Report is what a finished job wrote and what it skipped.
type Report struct {
	Files    []string  `json:"files"`
	Counts   []uint64  `json:"counts"`
	Samples  uint64    `json:"samples"`
	Skipped  uint64    `json:"skipped"`
	Problems []Problem `json:"problems"` // the first MaxProblems
	NumProbs uint64    `json:"num_problems"`
	// Groups are the problems by reason (the same in many samples: one
	// group), in order of their first sample; the first MaxGroups reasons.
	Groups []ProblemGroup `json:"problem_groups"`
}

// ProblemGroup is the problems of one reason: how many, and the first few.
// Reasons that differ only by the sample's key or member are one.
type ProblemGroup struct {
	Reason   string    `json:"reason"`
	Count    uint64    `json:"count"`
	Dropped  bool      `json:"sample_skipped"`
	Examples []Problem `json:"examples"` // the first MaxExamples
}

// MaxExamples bounds the problems a group lists; MaxGroups the groups.
const (
	MaxExamples = 3
	MaxGroups   = 1000
)

// groupKey is what problems of one group share: their reason with their
// own key and member taken out, and what they cost.
func (p Problem) groupKey() string {
	r := p.Reason
	if p.Member != "" {
		r = strings.ReplaceAll(r, strconv.Quote(p.Member), `"<member>"`)
	}
	if p.Key != "" {
		r = strings.ReplaceAll(r, strconv.Quote(p.Key), `"<key>"`)
	}
	return fmt.Sprintf("%t %t %s", p.Dropped, p.Shard, r)
}

// DefaultQueueBytes is a source's read-ahead budget unless Options say.
const DefaultQueueBytes = 64 << 20

// queueSamples bounds a source's read-ahead in samples.
const queueSamples = 32

// MaxProblems bounds the problems a report lists; it counts them all.
const MaxProblems = 1000

// TextBatch is a batch of captions waiting for their tokens.
type TextBatch struct {
	ID    uint64
	Texts [][]byte
}

// Job is a running conversion.
type Job struct {
	opts   Options
	enc    *beton.SampleEncoder
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}

	mu     sync.Mutex
	err    error
	report Report
	groups map[string]int // groupKey -> index in report.Groups

	progress atomic.Int64 // samples placed or skipped

	texts   chan *batch // batches for the caller's tokenizer, in order
	handed  *batch      // the batch handed out by Texts, awaiting PutTokens
	tokened chan *batch // batches with their tokens, in order, to the encoders
	fed     chan uint64 // the number of batches, once the feeder is done
	handMu  sync.Mutex
	jobs    chan *work
	placed  chan *work
	release func()
}

// work is one sample on its way through the job, or the end of its
// source (item nil, end set: io.EOF or why the source failed).
type work struct {
	source  int
	ordinal uint64
	item    *Item
	size    int64 // the item's bytes, held in its source's queue
	end     error
	enc     []field.Encoded
	err     error // encoding's
	done    chan struct{}
}

type batch struct {
	id    uint64
	items []*work
	texts [][]byte
}

// Run starts converting sources. The caller then hands out texts (when
// Tokenize is set) and calls Wait, or Abort.
func Run(sources []Source, opts Options) (*Job, error) {
	if len(sources) == 0 {
		return nil, errors.New("no input shards")
	}
	if opts.Name == nil {
		return nil, errors.New("no output name")
	}
	if opts.Split == BySize && opts.Target == 0 {
		return nil, errors.New("a target size of 0 bytes")
	}
	for _, f := range opts.Tokenize {
		if f < 0 || f >= len(opts.Fields) || opts.Fields[f].Type != field.Text {
			return nil, fmt.Errorf("field %d takes no tokens: it is not a TextField", f)
		}
	}
	enc, err := beton.NewSampleEncoder(opts.Fields, opts.Encoders)
	if err != nil {
		return nil, err
	}
	if opts.Workers < 1 {
		opts.Workers = procs.CPUs()
	}
	if opts.Readers < 1 {
		opts.Readers = min(opts.Workers, 4)
	}
	if opts.TextBatch < 1 {
		opts.TextBatch = 64
	}
	if opts.QueueBytes < 1 {
		opts.QueueBytes = DefaultQueueBytes
	}
	// The placer waits for samples in order while the feeder fills a
	// batch of texts behind them: room for two batches keeps both going.
	inFlight := 4*opts.Workers + 16
	if len(opts.Tokenize) > 0 {
		inFlight += 2 * opts.TextBatch
	}
	j := &Job{opts: opts, enc: enc, done: make(chan struct{}),
		texts: make(chan *batch, 2), tokened: make(chan *batch, 2), fed: make(chan uint64, 1),
		jobs: make(chan *work, 2*opts.Workers), placed: make(chan *work, inFlight)}
	j.ctx, j.cancel = context.WithCancel(context.Background())
	j.release = procs.Add(opts.Workers)

	feeds := j.read(sources)
	j.go1(func() { j.feed(sources, feeds) })
	var encoders sync.WaitGroup
	for range opts.Workers {
		encoders.Add(1)
		j.go1(func() { defer encoders.Done(); j.encode() })
	}
	j.go1(func() { encoders.Wait(); j.release() })
	placerDone := make(chan struct{})
	j.go1(func() { defer close(placerDone); j.place(sources) })
	go func() {
		<-placerDone
		// The placer is done, or failed: everything else stops, readers
		// in a read too (closing their source makes it fail).
		j.cancel()
		for _, s := range sources {
			s.Close()
		}
		j.wg.Wait()
		close(j.done)
	}()
	return j, nil
}

func (j *Job) go1(f func()) {
	j.wg.Add(1)
	go func() { defer j.wg.Done(); f() }()
}

func (j *Job) fail(err error) {
	j.mu.Lock()
	if j.err == nil {
		j.err = err
	}
	j.mu.Unlock()
	j.cancel()
}

// read starts the sources' readers, Readers at a time in source order:
// source k's items come on feeds[k], then an item-less work with end set
// (io.EOF at a clean end).
func (j *Job) read(sources []Source) []*queue {
	feeds := make([]*queue, len(sources))
	for k := range feeds {
		feeds[k] = &queue{items: make(chan *work, queueSamples), room: make(chan struct{}, 1), budget: j.opts.QueueBytes}
	}
	slots := make(chan struct{}, j.opts.Readers)
	j.go1(func() {
		for k, s := range sources {
			select {
			case slots <- struct{}{}:
			case <-j.ctx.Done():
				return
			}
			j.go1(func() {
				defer func() { <-slots }()
				for {
					it, err := s.Next()
					if it == nil && err == nil {
						err = fmt.Errorf("%s: no sample and no error", s.Name())
					}
					if err != nil {
						it = nil
					}
					if !feeds[k].put(j.ctx, &work{source: k, item: it, end: err}) {
						return
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	return feeds
}

// queue is a source's read-ahead: at most queueSamples samples, and
// budget bytes of them unless it holds none (so a larger sample passes
// alone). One reader puts, the feeder takes.
type queue struct {
	items  chan *work
	room   chan struct{} // a token after a take: the reader looks again
	budget int64

	mu   sync.Mutex
	held int64
}

func (q *queue) put(ctx context.Context, w *work) bool {
	if w.item != nil {
		w.size = w.item.bytes()
	}
	for {
		q.mu.Lock()
		fits := q.held == 0 || q.held+w.size <= q.budget
		if fits {
			q.held += w.size
		}
		q.mu.Unlock()
		if fits {
			break
		}
		select {
		case <-q.room:
		case <-ctx.Done():
			return false
		}
	}
	select {
	case q.items <- w:
		return true
	case <-ctx.Done():
		return false
	}
}

func (q *queue) take(ctx context.Context) (*work, bool) {
	select {
	case w := <-q.items:
		q.mu.Lock()
		q.held -= w.size
		q.mu.Unlock()
		select {
		case q.room <- struct{}{}:
		default:
		}
		return w, true
	case <-ctx.Done():
		return nil, false
	}
}

// bytes is what the item's values hold.
func (it *Item) bytes() int64 {
	n := int64(0)
	for _, v := range it.Values {
		n += int64(len(v.Data))
		for _, t := range v.Texts {
			n += int64(len(t))
		}
		for _, t := range v.Tokens {
			n += 4 * int64(len(t))
		}
	}
	return n
}

// feed takes the sources' items in order, numbers them, and sends them on
// to the encoders, through the caller's tokenizer when it has texts to
// tokenize.
func (j *Job) feed(sources []Source, feeds []*queue) {
	defer close(j.placed)
	tokenize := len(j.opts.Tokenize) > 0
	var ordinal, ids uint64
	cur := &batch{}
	if tokenize {
		j.go1(j.release1)
		defer func() { j.fed <- ids }() // buffered: never blocks
		defer close(j.texts)
	} else {
		defer close(j.jobs)
	}
	send := func(w *work) bool {
		w.done = make(chan struct{})
		select {
		case j.placed <- w:
		case <-j.ctx.Done():
			return false
		}
		if w.end != nil || dropped(w.item) {
			close(w.done) // nothing to encode
			return true
		}
		if tokenize {
			cur.items = append(cur.items, w)
			for _, f := range j.opts.Tokenize {
				cur.texts = append(cur.texts, w.item.Values[f].Texts...)
			}
			if len(cur.items) >= j.opts.TextBatch {
				return j.flush(&cur, &ids)
			}
			return true
		}
		select {
		case j.jobs <- w:
			return true
		case <-j.ctx.Done():
			return false
		}
	}
	for k := range sources {
		for {
			w, ok := feeds[k].take(j.ctx)
			if !ok {
				return
			}
			end := w.end
			if end == io.EOF {
				break
			}
			if end == nil {
				w.ordinal = ordinal
				ordinal++
			}
			if !send(w) {
				return
			}
			if end != nil {
				break
			}
		}
	}
	if tokenize && len(cur.items) > 0 {
		j.flush(&cur, &ids)
	}
	// Marks the end: the placer closes the last files after it.
	select {
	case j.placed <- &work{source: len(sources), done: closedChan}:
	case <-j.ctx.Done():
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func dropped(it *Item) bool {
	for _, p := range it.Problems {
		if p.Dropped {
			return true
		}
	}
	return false
}

func (j *Job) flush(cur **batch, ids *uint64) bool {
	b := *cur
	b.id = *ids
	*ids++
	*cur = &batch{}
	// Through the caller even without texts (samples without captions,
	// which fail later): batches keep their order only on one path.
	select {
	case j.texts <- b:
		return true
	case <-j.ctx.Done():
		return false
	}
}

// release1 passes tokenized batches, in order, to the encoders, and ends
// their input after the last.
func (j *Job) release1() {
	defer close(j.jobs)
	total, passed := uint64(1<<63), uint64(0)
	for passed < total {
		var b *batch
		select {
		case b = <-j.tokened:
		case total = <-j.fed:
			continue
		case <-j.ctx.Done():
			return
		}
		passed++
		for _, w := range b.items {
			select {
			case j.jobs <- w:
			case <-j.ctx.Done():
				return
			}
		}
	}
}

// Texts returns the next batch of captions to tokenize, waiting up to
// timeout; ok is false when none came in time. finished is true when no
// more will come (every caption has been handed out, or the job failed).
func (j *Job) Texts(timeout time.Duration) (b TextBatch, ok, finished bool, err error) {
	j.handMu.Lock()
	defer j.handMu.Unlock()
	if j.handed != nil {
		return TextBatch{}, false, false, fmt.Errorf("text batch %d is still waiting for its tokens", j.handed.id)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case x, open := <-j.texts:
		if !open {
			return TextBatch{}, false, true, nil
		}
		j.handed = x
		return TextBatch{ID: x.id, Texts: x.texts}, true, false, nil
	case <-j.ctx.Done():
		return TextBatch{}, false, true, nil
	case <-t.C:
		return TextBatch{}, false, false, nil
	}
}

// PutTokens gives the tokens of batch id's texts, one list per text.
func (j *Job) PutTokens(id uint64, tokens [][]uint32) error {
	j.handMu.Lock()
	defer j.handMu.Unlock()
	b := j.handed
	if b == nil || b.id != id {
		return fmt.Errorf("tokens for text batch %d, which is not the batch handed out", id)
	}
	if len(tokens) != len(b.texts) {
		return fmt.Errorf("text batch %d: %d token lists for %d texts", id, len(tokens), len(b.texts))
	}
	j.handed = nil
	t := 0
	for _, w := range b.items {
		for _, f := range j.opts.Tokenize {
			v := &w.item.Values[f]
			v.Tokens = tokens[t : t+len(v.Texts)]
			t += len(v.Texts)
		}
	}
	select {
	case j.tokened <- b:
		return nil
	case <-j.ctx.Done():
		return j.Err()
	}
}

func (j *Job) encode() {
	for w := range j.jobs {
		w.enc, w.err = j.enc.Encode(w.ordinal, w.item.Values)
		w.item.Values = nil // the source bytes are no longer needed
		close(w.done)
		runtime.Gosched() // a schedule tick per sample (see package procs)
	}
}

// out is the output file being written.
type out struct {
	k    int
	name string
	dest *dataset.Dest
	w    *beton.Writer
}

// place takes the samples in order: it records bad ones, appends good
// ones to the output file, and cuts files.
func (j *Job) place(sources []Source) {
	var cur *out
	next := 0 // the next output file's number
	// Files are finished (synced, renamed, uploaded) in the background while
	// the next one fills; the report lists them in order once all are done.
	type closing struct {
		name string
		n    uint64
		err  error
	}
	var closed []*closing
	var closers sync.WaitGroup
	defer func() {
		if cur != nil { // failed
			cur.w.Abort()
			cur.dest.Abort()
		}
		closers.Wait()
		j.mu.Lock()
		defer j.mu.Unlock()
		for _, c := range closed {
			if c.err != nil {
				if j.err == nil {
					j.err = fmt.Errorf("output %s: %w", c.name, c.err)
				}
				continue
			}
			j.report.Files = append(j.report.Files, c.name)
			j.report.Counts = append(j.report.Counts, c.n)
		}
	}()
	open := func() bool {
		name := j.opts.Name(next)
		d, err := dataset.Create(name, j.opts.Dest)
		if err == nil {
			var w *beton.Writer
			if w, err = beton.CreateAppender(d.Path(), j.opts.Fields, beton.WriterOptions{PageSize: j.opts.PageSize}); err == nil {
				cur = &out{k: next, name: name, dest: d, w: w}
				next++
				return true
			}
			d.Abort()
		}
		j.fail(fmt.Errorf("output %s: %w", name, err))
		return false
	}
	finish := func() bool {
		c := cur
		cur = nil
		cl := &closing{name: c.name, n: c.w.Samples()}
		closed = append(closed, cl)
		closers.Add(1)
		go func() {
			defer closers.Done()
			cl.err = c.dest.Finish(c.w.Close())
		}()
		return j.Err() == nil
	}
	// upTo finishes files until the current one is for source k
	// (PerSource), opening one when none is open.
	upTo := func(k int) bool {
		if j.opts.Split == PerSource {
			for cur != nil && cur.k < k || cur == nil && next <= k {
				if cur != nil && !finish() {
					return false
				}
				if next <= k && !open() {
					return false
				}
			}
			return true
		}
		return cur != nil || open()
	}
	for w := range j.placed {
		select {
		case <-w.done:
		case <-j.ctx.Done():
			return
		}
		if w.source == len(sources) { // the end
			if err := j.nothingWritten(); err != nil {
				j.fail(err)
				return
			}
			if (j.opts.Split == PerSource || cur == nil) && !upTo(len(sources)-1) {
				return
			}
			if cur != nil && !finish() {
				return
			}
			return
		}
		name := sources[w.source].Name()
		if w.item == nil { // the source ended in an error
			p := Problem{Reason: w.end.Error(), Shard: true, Err: w.end}
			errors.As(w.end, &p) // a source's Problem says what the error cost
			p.Source = name
			if !j.problem(p) {
				return
			}
			if p.Dropped {
				j.skipped()
			}
			continue
		}
		ok := true
		for _, p := range w.item.Problems {
			p.Source, p.Key = name, w.item.Key
			ok = ok && j.problem(p)
		}
		if !ok {
			return
		}
		if dropped(w.item) {
			j.skipped()
			continue
		}
		if w.err != nil {
			if !j.problem(Problem{Source: name, Key: w.item.Key, Reason: w.err.Error(), Dropped: true, Err: w.err}) {
				return
			}
			j.skipped()
			continue
		}
		if !upTo(w.source) {
			return
		}
		if j.opts.Split == BySize && cur.w.Samples() > 0 && cur.w.Size() >= j.opts.Target {
			if !finish() || !open() {
				return
			}
		}
		if err := cur.w.Append(w.enc); err != nil {
			j.fail(fmt.Errorf("%s: sample %q: %w", name, w.item.Key, err))
			return
		}
		w.enc = nil
		j.mu.Lock()
		j.report.Samples++
		j.mu.Unlock()
		j.progress.Add(1)
	}
}

// problem records p; false when it fails the write.
func (j *Job) problem(p Problem) bool {
	if !j.opts.Skip {
		if p.Shard {
			j.fail(fmt.Errorf("%w: %w", ErrShard, p))
		} else {
			j.fail(fmt.Errorf("%w: %w", ErrBad, p))
		}
		return false
	}
	j.mu.Lock()
	j.report.NumProbs++
	if len(j.report.Problems) < MaxProblems {
		j.report.Problems = append(j.report.Problems, p)
	}
	k := p.groupKey()
	if g, ok := j.groups[k]; ok {
		grp := &j.report.Groups[g]
		grp.Count++
		if len(grp.Examples) < MaxExamples {
			grp.Examples = append(grp.Examples, p)
		}
	} else if len(j.report.Groups) < MaxGroups {
		if j.groups == nil {
			j.groups = map[string]int{}
		}
		j.groups[k] = len(j.report.Groups)
		j.report.Groups = append(j.report.Groups, ProblemGroup{Reason: p.Reason, Count: 1, Dropped: p.Dropped, Examples: []Problem{p}})
	}
	j.mu.Unlock()
	return true
}

// nothingWritten is the error of a job that skipped every sample it read:
// files without a sample are no dataset, and a report saying so is easy
// to miss.
func (j *Job) nothingWritten() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.report.Samples > 0 || j.report.NumProbs == 0 {
		return nil
	}
	// The first problem is wrapped, so that its kind (a bad sample, a
	// missing shard) decides the exception the caller sees.
	return fmt.Errorf("no sample could be written: %d problems, the first: %w",
		j.report.NumProbs, j.report.Problems[0])
}

func (j *Job) skipped() {
	j.mu.Lock()
	j.report.Skipped++
	j.mu.Unlock()
	j.progress.Add(1)
}

// Progress is the number of samples written or skipped so far.
func (j *Job) Progress() int64 { return j.progress.Load() }

// Err is the job's first error, if any.
func (j *Job) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// Done is closed when the job has ended and released everything.
func (j *Job) Done() <-chan struct{} { return j.done }

// Wait waits for the job to end and returns its report, or its error.
func (j *Job) Wait() (Report, error) {
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return Report{}, j.err
	}
	return j.report, nil
}

// Stop makes the job fail ("aborted") without waiting for it to end:
// calls blocked on it (Put, Texts, Wait) return.
func (j *Job) Stop() { j.fail(errors.New("aborted")) }

// Abort stops the job, removes the file being written, and waits.
func (j *Job) Abort() {
	j.Stop()
	<-j.done
}
