package beton

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/procs"
)

// Writer writes a .beton file. Samples are handed to Put in index order;
// worker goroutines encode them in parallel and a single placer packs them
// into pages in index order, so the output is identical for any number of
// workers. The file is written under a temporary name and renamed into place
// by Close, so a failed or abandoned write never leaves a partial file at path.
type Writer struct {
	path, tmp  string
	f          *os.File
	fields     []field.Desc
	enc        *SampleEncoder
	layout     field.Layout
	n          uint64
	pageSize   uint64
	metaOff    uint64
	firstPage  uint64
	next       uint64 // next sample index Put expects
	jobs       chan job
	placed     chan chan result
	workers    sync.WaitGroup
	release    func() // gives back the encoders' Ps (procs.Add)
	placerDone chan struct{}

	mu  sync.Mutex
	err error

	// Placer state, owned by the placer goroutine.
	page     []byte
	pageNum  uint64 // page being filled; 0 while none
	pageUsed uint64
	rows     []byte
	rowsAt   uint64
	allocs   []byte
	written  uint64 // pages written
	placedN  atomic.Uint64
	closed   bool

	// Appending (CreateAppender): the number of samples is known only at
	// Close, so the heap starts at a provisional page and rows stay in
	// memory, moved with the pages at Close when the rows need more room.
	appending bool
	// keepRows: the rows stay in memory until Close (appending, or tables
	// that leave room in their page for a heap), and ptrs are the offsets
	// in rows of every heap pointer placed, for Close to move.
	keepRows bool
	ptrs     []int

	atMost bool // numSamples is a bound (WriterOptions.AtMost)
}

type job struct {
	sample uint64
	values []field.Value
	out    chan result
}

type result struct {
	sample uint64
	enc    []field.Encoded
	err    error
}

// WriterOptions configure Create.
type WriterOptions struct {
	PageSize uint64 // 0: DefaultPageSize
	Workers  int    // < 1: number of CPUs
	// Custom gives the metadata column of each custom (type 255) field, by name.
	Custom map[string]field.Column
	// AtMost makes numSamples a bound: Close writes the samples put, fewer
	// when the caller left some out (a writer skipping bad input). Their
	// metadata rows keep the room reserved for the bound.
	AtMost bool
}

// Create starts writing numSamples samples with the given fields to path.
// encoders[i] encodes values of fields[i].
func Create(path string, fields []field.Desc, encoders []field.Encoder, numSamples uint64, opts WriterOptions) (*Writer, error) {
	enc, err := NewSampleEncoder(fields, encoders)
	if err != nil {
		return nil, err
	}
	if opts.Workers < 1 {
		opts.Workers = procs.CPUs()
	}
	w, err := create(path, fields, numSamples, opts)
	if err != nil {
		return nil, err
	}
	w.enc = enc
	w.jobs = make(chan job, 2*opts.Workers)
	w.placed = make(chan chan result, 4*opts.Workers+16)
	// The encoders spend their time in C calls: keep a P idle beside them.
	w.release = procs.Add(opts.Workers)
	for i := 0; i < opts.Workers; i++ {
		w.workers.Add(1)
		go w.encodeLoop()
	}
	go w.placeLoop()
	return w, nil
}

// CreateAppender starts a .beton at path whose samples come already
// encoded (SampleEncoder.Encode) and are placed by Append, in order, on the
// caller's goroutine; their number is known only at Close. The file is
// byte for byte what Create would write for the same samples.
func CreateAppender(path string, fields []field.Desc, opts WriterOptions) (*Writer, error) {
	w, err := create(path, fields, 0, opts)
	if err != nil {
		return nil, err
	}
	w.appending, w.keepRows = true, true
	w.release = func() {}
	close(w.placerDone)
	return w, nil
}

func create(path string, fields []field.Desc, numSamples uint64, opts WriterOptions) (*Writer, error) {
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	if err := CheckPageSize(opts.PageSize); err != nil {
		return nil, err
	}
	if len(fields) == 0 || len(fields) > 0xffff {
		return nil, fmt.Errorf("a dataset needs between 1 and 65535 fields, got %d", len(fields))
	}
	var descs []byte
	seen := map[string]bool{}
	for _, d := range fields {
		if seen[d.Name] {
			return nil, fmt.Errorf("field name %q appears twice", d.Name)
		}
		seen[d.Name] = true
		b, err := d.MarshalBinary()
		if err != nil {
			return nil, err
		}
		descs = append(descs, b...)
	}
	layout, err := field.NewLayout(fields, opts.Custom)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			// Said of the folder: the temporary file's name is ours, not the user's.
			return nil, missingFolder{path, dir}
		}
		return nil, fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	metaOff := uint64(HeaderSize + len(descs))
	heapOff := metaOff + numSamples*uint64(layout.RowSize)
	w := &Writer{
		path: path, tmp: f.Name(), f: f,
		fields: fields, layout: layout,
		n: numSamples, pageSize: opts.PageSize, metaOff: metaOff,
		firstPage:  (heapOff + opts.PageSize - 1) / opts.PageSize,
		placerDone: make(chan struct{}),
		rowsAt:     metaOff,
		keepRows:   heapOff < opts.PageSize,
		atMost:     opts.AtMost,
	}
	if _, err := f.WriteAt(descs, HeaderSize); err != nil {
		f.Close()
		os.Remove(w.tmp)
		return nil, fmt.Errorf("write %s: %w", w.tmp, err)
	}
	return w, nil
}

// SampleEncoder turns one sample's values into its fields' encoded form:
// images first, as the fields that follow one need its sizes.
type SampleEncoder struct {
	fields   []field.Desc
	encoders []field.Encoder
	follows  []int // the field each field's values are laid on (field.Follower), or -1
}

// NewSampleEncoder returns the encoder of samples of fields, encoders[i]
// encoding values of fields[i].
func NewSampleEncoder(fields []field.Desc, encoders []field.Encoder) (*SampleEncoder, error) {
	if len(encoders) != len(fields) {
		return nil, fmt.Errorf("%d encoders for %d fields", len(encoders), len(fields))
	}
	follows, err := followed(fields, encoders)
	if err != nil {
		return nil, err
	}
	return &SampleEncoder{fields: fields, encoders: encoders, follows: follows}, nil
}

// Encode encodes values (one per field) of sample, the index that keys
// per-sample randomness (RGBImageField's 'proportion' mode). It is safe
// for concurrent use; a panicking encoder is an error.
func (e *SampleEncoder) Encode(sample uint64, values []field.Value) ([]field.Encoded, error) {
	if len(values) != len(e.fields) {
		return nil, fmt.Errorf("%d values for %d fields", len(values), len(e.fields))
	}
	out := make([]field.Encoded, len(values))
	for pass := 0; pass < 2; pass++ {
		for i, v := range values {
			if (e.follows[i] >= 0) != (pass == 1) {
				continue
			}
			enc, err := e.encodeOne(i, v, sample, out)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", e.fields[i].Name, err)
			}
			out[i] = enc
		}
	}
	return out, nil
}

// encodeOne turns a panic in an encoder into an error so one bad sample
// cannot take the process down.
func (e *SampleEncoder) encodeOne(i int, v field.Value, sample uint64, done []field.Encoded) (enc field.Encoded, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	if f := e.follows[i]; f >= 0 {
		return e.encoders[i].(field.Follower).EncodeFollowing(v, sample, done[f].Image)
	}
	return e.encoders[i].Encode(v, sample)
}

func (w *Writer) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

// Err returns the first error met so far.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Put queues sample for encoding. Samples must come in index order 0, 1, ...
// Put blocks when the encoders are behind. It returns the first error met so
// far, by this or an earlier sample.
func (w *Writer) Put(sample uint64, values []field.Value) error {
	if err := w.Err(); err != nil {
		return err
	}
	if w.closed {
		return errors.New("writer is closed")
	}
	if w.appending {
		return errors.New("an appending writer takes encoded samples (Append)")
	}
	if sample != w.next {
		return fmt.Errorf("sample %d put out of order: expected sample %d", sample, w.next)
	}
	if sample >= w.n {
		return fmt.Errorf("sample %d is beyond the %d samples the writer was created for", sample, w.n)
	}
	if len(values) != len(w.fields) {
		return fmt.Errorf("sample %d has %d values for %d fields", sample, len(values), len(w.fields))
	}
	w.next++
	out := make(chan result, 1)
	w.placed <- out
	w.jobs <- job{sample, values, out}
	return nil
}

func (w *Writer) encodeLoop() {
	defer w.workers.Done()
	for j := range w.jobs {
		res := result{sample: j.sample}
		if res.enc, res.err = w.enc.Encode(j.sample, j.values); res.err != nil {
			res.err = fmt.Errorf("sample %d, %w", j.sample, res.err)
		}
		j.out <- res
		runtime.Gosched() // a schedule tick per sample (see package procs)
	}
}

// Append places the next sample of an appending writer (CreateAppender):
// enc is what SampleEncoder.Encode gave for it.
func (w *Writer) Append(enc []field.Encoded) error {
	if err := w.Err(); err != nil {
		return err
	}
	if w.closed {
		return errors.New("writer is closed")
	}
	if !w.appending {
		return errors.New("Append needs a writer made by CreateAppender")
	}
	if len(enc) != len(w.fields) {
		return fmt.Errorf("sample %d has %d encoded values for %d fields", w.next, len(enc), len(w.fields))
	}
	if err := w.place(w.next, enc); err != nil {
		w.fail(err)
		return err
	}
	w.next++
	w.n = w.next
	return nil
}

// Samples is the number of samples put or appended so far.
func (w *Writer) Samples() uint64 { return w.next }

// Size is about the size of the file if it were closed now: its tables,
// the heap and the allocation table (see heapEnd).
func (w *Writer) Size() uint64 {
	tables := w.metaOff + w.next*uint64(w.layout.RowSize)
	end, _ := w.heapEnd(tables)
	return end + uint64(len(w.allocs))
}

// heapEnd is where the heap ends, and so the allocation table starts, for
// tables ending at byte tables; onePage says the heap follows the tables in
// their page. The heap's pages are the file's page_size-aligned pages, so
// that FFCV's process cache, which reads page p at p * page_size, finds each
// allocation in one page. The heap starts at the page after the tables, as
// FFCV's writer puts it, unless all of it fits after the tables in their
// page: then a small dataset is one page, with no padding before its heap.
// The last page ends at its last byte, not padded to a whole page.
func (w *Writer) heapEnd(tables uint64) (end uint64, onePage bool) {
	switch {
	case w.pageNum == 0:
		return tables, false
	case w.keepRows && w.written == 0 && tables+w.pageUsed <= w.pageSize:
		return tables + w.pageUsed, true
	}
	first := (tables + w.pageSize - 1) / w.pageSize
	return (first+w.pageNum-w.firstPage)*w.pageSize + w.pageUsed, false
}

// followed resolves the image field each Follower encoder names.
func followed(fields []field.Desc, encoders []field.Encoder) ([]int, error) {
	out := make([]int, len(fields))
	for i, e := range encoders {
		out[i] = -1
		fl, ok := e.(field.Follower)
		if !ok || fl.Follows() == "" {
			continue
		}
		out[i] = slices.IndexFunc(fields, func(d field.Desc) bool { return d.Name == fl.Follows() })
		if out[i] < 0 || fields[out[i]].Type != field.RGBImage {
			return nil, fmt.Errorf("field %q follows %q, which is not an RGBImageField of this dataset", fields[i].Name, fl.Follows())
		}
	}
	return out, nil
}

func (w *Writer) placeLoop() {
	defer close(w.placerDone)
	for out := range w.placed {
		res := <-out
		if w.Err() != nil {
			continue // drain
		}
		if res.err == nil {
			res.err = w.place(res.sample, res.enc)
		}
		if res.err != nil {
			w.fail(res.err)
		}
	}
}

// place packs one encoded sample: all its heap allocations go contiguously
// into one page, opening a new page when the current one lacks room.
func (w *Writer) place(sample uint64, enc []field.Encoded) error {
	var total uint64
	for _, e := range enc {
		total += uint64(len(e.Heap))
	}
	if total > w.pageSize {
		return fmt.Errorf("%w: sample %d needs %d bytes of heap, more than the page size %d: raise page_size", field.ErrData, sample, total, w.pageSize)
	}
	hasHeap := false
	for _, e := range enc {
		hasHeap = hasHeap || e.HasHeap
	}
	// As FFCV's allocator: a sample without heap bytes opens no page; before
	// the first page its (empty) allocations point one page before it.
	if hasHeap && total > 0 && (w.pageNum == 0 || w.pageUsed+total > w.pageSize) {
		if err := w.flushPage(); err != nil {
			return err
		}
		if w.written > 0 && !w.appending {
			// The heap needs more than one page: its pointers stay put.
			w.keepRows, w.ptrs = false, nil
		}
		if w.pageNum == 0 {
			w.pageNum = w.firstPage
		} else {
			w.pageNum++
		}
		w.pageUsed = 0
		if w.page == nil {
			w.page = make([]byte, w.pageSize)
		} else {
			clear(w.page)
		}
	}
	row := make([]byte, w.layout.RowSize)
	for i, e := range enc {
		col := row[w.layout.Offsets[i]:]
		copy(col, e.Column)
		if !e.HasHeap {
			continue
		}
		ptr := w.pageNum*w.pageSize + w.pageUsed
		if w.pageNum == 0 {
			ptr = (w.firstPage - 1) * w.pageSize
		}
		copy(w.page[w.pageUsed:], e.Heap)
		w.pageUsed += uint64(len(e.Heap))
		binary.LittleEndian.PutUint64(col[e.PtrOffset:], ptr)
		if w.keepRows {
			w.ptrs = append(w.ptrs, len(w.rows)+w.layout.Offsets[i]+e.PtrOffset)
		}
		w.allocs = binary.LittleEndian.AppendUint64(w.allocs, sample)
		w.allocs = binary.LittleEndian.AppendUint64(w.allocs, ptr)
		w.allocs = binary.LittleEndian.AppendUint64(w.allocs, uint64(len(e.Heap)))
	}
	w.rows = append(w.rows, row...)
	w.placedN.Add(1)
	if len(w.rows) >= 1<<20 && !w.keepRows {
		return w.flushRows()
	}
	return nil
}

func (w *Writer) flushRows() error {
	if _, err := w.f.WriteAt(w.rows, int64(w.rowsAt)); err != nil {
		return fmt.Errorf("write metadata at byte %d: %w", w.rowsAt, err)
	}
	w.rowsAt += uint64(len(w.rows))
	w.rows = w.rows[:0]
	return nil
}

func (w *Writer) flushPage() error {
	if w.pageNum == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(w.page, int64(w.pageNum*w.pageSize)); err != nil {
		return fmt.Errorf("write page %d: %w", w.pageNum, err)
	}
	w.written++
	return nil
}

// Close waits for every queued sample, writes the tables and the header, and
// atomically renames the file into place. On any error the temporary file is
// removed and path is left untouched.
func (w *Writer) Close() error {
	if w.closed {
		return errors.New("writer already closed")
	}
	w.stop()
	err := w.Err()
	if err == nil && w.next != w.n {
		if w.atMost {
			w.n = w.next
		} else {
			err = fmt.Errorf("only %d of %d samples were written", w.next, w.n)
		}
	}
	if err == nil {
		err = w.finish()
	}
	if err != nil {
		w.f.Close()
		os.Remove(w.tmp)
		return err
	}
	return nil
}

// Abort stops writing and removes the temporary file.
func (w *Writer) Abort() {
	if !w.closed {
		w.fail(errors.New("aborted"))
		w.stop()
	}
	w.f.Close()
	os.Remove(w.tmp)
}

func (w *Writer) stop() {
	w.closed = true
	if !w.appending {
		close(w.jobs)
		close(w.placed)
	}
	w.workers.Wait()
	w.release()
	<-w.placerDone
}

func (w *Writer) finish() error {
	tables := w.metaOff + w.n*uint64(w.layout.RowSize)
	allocPtr, onePage := w.heapEnd(tables)
	if onePage {
		if err := w.onePage(tables); err != nil {
			return err
		}
	} else if w.pageNum != 0 {
		if err := w.flushPage(); err != nil {
			return err
		}
		if w.appending {
			if err := w.settle(); err != nil {
				return err
			}
		}
	}
	if err := w.flushRows(); err != nil {
		return err
	}
	// The allocation table overwrites the last page's unused bytes, and
	// the file ends with it.
	if _, err := w.f.WriteAt(w.allocs, int64(allocPtr)); err != nil {
		return fmt.Errorf("write allocation table: %w", err)
	}
	if err := w.f.Truncate(int64(allocPtr) + int64(len(w.allocs))); err != nil {
		return fmt.Errorf("size %s: %w", w.tmp, err)
	}
	h := Header{Version: Version, NumFields: uint16(len(w.fields)), PageSize: uint32(w.pageSize), NumSamples: w.n, AllocTablePtr: allocPtr}
	if _, err := w.f.WriteAt(h.marshal(), 0); err != nil {
		return fmt.Errorf("write header: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.tmp, err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", w.tmp, err)
	}
	if err := os.Chmod(w.tmp, 0o644); err != nil {
		return err
	}
	if err := os.Rename(w.tmp, w.path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", w.tmp, w.path, err)
	}
	return nil
}

// onePage writes the heap, all of it on the first page and still in
// memory, right after the tables, which end at byte tables, and moves its
// pointers there. Empty allocations placed before the page opened keep
// their pointer, which lies before the heap.
func (w *Writer) onePage(tables uint64) error {
	if _, err := w.f.WriteAt(w.page[:w.pageUsed], int64(tables)); err != nil {
		return fmt.Errorf("write the heap: %w", err)
	}
	from := w.firstPage * w.pageSize
	move := func(b []byte) {
		if p := binary.LittleEndian.Uint64(b); p >= from {
			binary.LittleEndian.PutUint64(b, p-from+tables)
		}
	}
	for _, at := range w.ptrs {
		move(w.rows[at:])
	}
	for e := 8; e < len(w.allocs); e += AllocEntrySize {
		move(w.allocs[e:])
	}
	return nil
}

// settle puts an appending writer's heap where the number of samples,
// known now, wants it: when the rows outgrew the room before the
// provisional first page, the pages move up by the pages they need, the
// room they leave is zeroed, and every heap pointer moves with them.
func (w *Writer) settle() error {
	first := (w.metaOff + w.n*uint64(w.layout.RowSize) + w.pageSize - 1) / w.pageSize
	delta := first - w.firstPage
	if delta == 0 {
		return nil
	}
	if w.pageNum != 0 {
		if w.page == nil {
			w.page = make([]byte, w.pageSize)
		}
		for p := w.pageNum; p >= w.firstPage; p-- {
			if _, err := w.f.ReadAt(w.page, int64(p*w.pageSize)); err != nil {
				return fmt.Errorf("move page %d: %w", p, err)
			}
			if _, err := w.f.WriteAt(w.page, int64((p+delta)*w.pageSize)); err != nil {
				return fmt.Errorf("move page %d: %w", p, err)
			}
		}
		clear(w.page)
		for p := w.firstPage; p < first; p++ {
			if _, err := w.f.WriteAt(w.page, int64(p*w.pageSize)); err != nil {
				return fmt.Errorf("clear page %d: %w", p, err)
			}
		}
		w.pageNum += delta
	}
	shift := delta * w.pageSize
	for _, at := range w.ptrs {
		binary.LittleEndian.PutUint64(w.rows[at:], binary.LittleEndian.Uint64(w.rows[at:])+shift)
	}
	for e := 8; e < len(w.allocs); e += AllocEntrySize {
		binary.LittleEndian.PutUint64(w.allocs[e:], binary.LittleEndian.Uint64(w.allocs[e:])+shift)
	}
	w.firstPage = first
	return nil
}

// PagesWritten is the number of heap pages written so far.
func (w *Writer) PagesWritten() uint64 { return w.written }

// Placed is the number of samples packed into the file so far.
func (w *Writer) Placed() uint64 { return w.placedN.Load() }

// missingFolder is the error of a file to write in a folder that does not
// exist; it is an fs.ErrNotExist.
type missingFolder struct{ path, dir string }

func (e missingFolder) Error() string {
	return fmt.Sprintf("write %s: its folder %s does not exist", e.path, e.dir)
}

func (e missingFolder) Is(target error) bool { return target == fs.ErrNotExist }
