package beton

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"sort"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// ErrNotMapped is returned for heap bytes of a reader that has no memory map
// (OpenAt, or shards not all mapped): they are read only through ReadAt,
// i.e. by the process cache.
var ErrNotMapped = errors.New("not memory-mapped: heap bytes are read only through the process cache (os_cache=False)")

// Reader gives read access to a .beton dataset: one file through a
// read-only memory map (Open), one file through an io.ReaderAt (OpenAt), or
// several shards read as one (Join). Opening validates the header,
// descriptors and table bounds and holds the metadata and allocation tables;
// rows and heap pointers are checked when they are read, so opening a file of
// any size is cheap. A Reader is safe for concurrent use.
type Reader struct {
	Path   string
	Header Header
	Fields []field.Desc
	Layout field.Layout

	data    []byte       // the whole address space, mapped; nil: heap bytes only through ReadAt
	meta    []byte       // the metadata table
	allocs  []byte       // the allocation table
	src     io.ReaderAt  // heap pages for ReadAt: the file, a remote object, the shards
	file    *os.File     // the mapped file (Open), kept open: ReadAt reads it even if the path is replaced
	size    uint64       // bytes of the address space (one file: its size)
	metaOff uint64       // M0
	spans   []span       // where each file's heap lies, by base; one for a single file
	shards  []*Reader    // Join's shards, owned
	starts  []uint64     // Join: the first sample of each shard
	labels  []string     // Join: whose each shard is, for errors (JoinOptions.Labels)
	release func() error // frees data, the tables and src

	allocOnce  sync.Once
	allocPtrs  []uint64 // allocation pointers, sorted, built on first lookup
	allocSizes []uint64
	allocErr   error
}

// span is one file's place in a reader's address space.
type span struct {
	base      uint64 // the file's byte 0
	heapStart uint64 // first byte after its metadata table
	heapEnd   uint64 // its allocation table: the end of its heap
}

// Open maps path and validates its structure. custom gives the metadata
// column of each custom field (type_id 255), by field name.
func Open(path string, custom map[string]field.Column) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := openFile(path, f, custom)
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

func openFile(path string, f *os.File, custom map[string]field.Column) (*Reader, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.EISDIR}
	}
	size := st.Size()
	if size < HeaderSize {
		return nil, fmt.Errorf("%s: %w: %d bytes is shorter than the %d-byte header", path, ErrFormat, size, HeaderSize)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, &fs.PathError{Op: "mmap", Path: path, Err: err}
	}
	r, err := newReader(path, data, custom)
	if err != nil {
		unix.Munmap(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The metadata table is read for every sample of every epoch: a copy,
	// as FFCV keeps one, so that a file rewritten in place under the
	// loader cannot hand out another file's labels or pointers as this
	// one's (heap bytes then fail to decode, naming the sample). Outside
	// the Go heap, since C callers hold it (ffcv_reader_tables).
	meta, err := copyOffHeap(r.meta)
	if err != nil {
		unix.Munmap(data)
		return nil, &fs.PathError{Op: "mmap", Path: path, Err: err}
	}
	r.meta = meta
	r.src, r.file = f, f
	r.release = func() error {
		err := unix.Munmap(data)
		if meta != nil {
			unix.Munmap(meta)
		}
		f.Close()
		return err
	}
	return r, nil
}

// copyOffHeap copies b into an anonymous private map (nil for no bytes).
func copyOffHeap(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, nil
	}
	m, err := unix.Mmap(-1, 0, len(b), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, err
	}
	copy(m, b)
	return m[:len(b):len(b)], nil
}

// newReader validates data as a whole .beton image, which the reader then
// points into; it does not own data.
func newReader(path string, data []byte, custom map[string]field.Column) (*Reader, error) {
	view := func(off, n uint64) ([]byte, error) { return data[off : off+n : off+n], nil }
	r, err := parse(path, data, uint64(len(data)), view, custom)
	if err != nil {
		return nil, err
	}
	r.data = data
	return r, nil
}

// prefixSize is how much OpenAt reads first: the header and, for any usual
// file, every field descriptor and a small metadata table, in one request.
const prefixSize = 64 << 10

// OpenAt reads the .beton file of size bytes behind src (named name in
// errors): the header and descriptors, the metadata table and the
// allocation table are read into memory with a few ReadAt calls and
// validated as Open does. Heap bytes are read only through ReadAt (the
// process cache); Heap, Read and Data return ErrNotMapped. Close closes src
// if it is an io.Closer.
func OpenAt(name string, src io.ReaderAt, size int64, custom map[string]field.Column) (*Reader, error) {
	if size < HeaderSize {
		return nil, fmt.Errorf("%s: %w: %d bytes is shorter than the %d-byte header", name, ErrFormat, size, HeaderSize)
	}
	prefix := make([]byte, min(uint64(size), prefixSize))
	if err := readFull(src, prefix, 0); err != nil {
		return nil, fmt.Errorf("%s: read the header: %w", name, err)
	}
	h, err := parseHeader(prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if descEnd := uint64(HeaderSize) + uint64(h.NumFields)*field.DescriptorSize; descEnd > uint64(len(prefix)) && descEnd <= uint64(size) {
		// Thousands of fields: read the rest of the descriptors.
		more := make([]byte, descEnd)
		copy(more, prefix)
		if err := readFull(src, more[len(prefix):], int64(len(prefix))); err != nil {
			return nil, fmt.Errorf("%s: read the field descriptors: %w", name, err)
		}
		prefix = more
	}
	var tables [][]byte
	free := func() {
		for _, b := range tables {
			freeMem(b)
		}
	}
	read := func(off, n uint64) ([]byte, error) {
		b, err := allocMem(n)
		if err != nil {
			return nil, err
		}
		tables = append(tables, b)
		if off+n <= uint64(len(prefix)) {
			copy(b, prefix[off:])
			return b, nil
		}
		if err := readFull(src, b, int64(off)); err != nil {
			return nil, fmt.Errorf("read bytes [%d, %d): %w", off, off+n, err)
		}
		return b, nil
	}
	r, err := parse(name, prefix, uint64(size), read, custom)
	if err != nil {
		free()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.src = src
	r.release = func() error {
		free()
		if c, ok := src.(io.Closer); ok {
			return c.Close()
		}
		return nil
	}
	return r, nil
}

// readFull fills p from src at off; a source shorter than its stated size
// is a truncated file.
func readFull(src io.ReaderAt, p []byte, off int64) error {
	n, err := src.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the file ends at byte %d, before byte %d (truncated?)", ErrFormat, off+int64(n), off+int64(len(p)))
	}
	return err
}

// allocMem and freeMem hold tables outside the Go heap: Python keeps views
// of them across calls, which cgo does not allow for Go memory.
func allocMem(n uint64) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	if n > math.MaxInt {
		return nil, fmt.Errorf("%w: a table of %d bytes", ErrFormat, n)
	}
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("allocate %d bytes: %w", n, err)
	}
	return b, nil
}

func freeMem(b []byte) {
	if len(b) > 0 {
		unix.Munmap(b)
	}
}

// parse validates a .beton file of size bytes whose first bytes are head
// (at least the header and, if they fit in the file, the field
// descriptors); table returns n bytes at off, for the metadata and
// allocation tables, which parse reads only once their bounds are checked.
func parse(path string, head []byte, size uint64, table func(off, n uint64) ([]byte, error), custom map[string]field.Column) (*Reader, error) {
	h, err := parseHeader(head)
	if err != nil {
		return nil, err
	}
	r := &Reader{Path: path, Header: h, size: size}
	descEnd := uint64(HeaderSize) + uint64(h.NumFields)*field.DescriptorSize
	if descEnd > size {
		return nil, fmt.Errorf("%w: %d field descriptors end at byte %d, past the end of the file (%d bytes)", ErrFormat, h.NumFields, descEnd, size)
	}
	seen := map[string]bool{}
	for i := 0; i < int(h.NumFields); i++ {
		off := HeaderSize + i*field.DescriptorSize
		d, err := field.ParseDesc(head[off : off+field.DescriptorSize])
		if err != nil {
			return nil, fmt.Errorf("%w: field %d: %v", ErrFormat, i, err)
		}
		if seen[d.Name] {
			return nil, fmt.Errorf("%w: field name %q appears twice", ErrFormat, d.Name)
		}
		seen[d.Name] = true
		r.Fields = append(r.Fields, d)
	}
	if r.Layout, err = field.NewLayout(r.Fields, custom); err != nil {
		if errors.Is(err, field.ErrNoHandler) {
			return nil, err // the caller's omission, not the file's fault
		}
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	r.metaOff = descEnd
	rows := uint64(r.Layout.RowSize)
	if rows > 0 && h.NumSamples > (math.MaxUint64-descEnd)/rows {
		return nil, fmt.Errorf("%w: %d samples overflow the metadata table size", ErrFormat, h.NumSamples)
	}
	if rows == 0 && h.NumSamples > size {
		// Empty rows take no room, so the table cannot bound the count: a
		// file still cannot hold more samples than it has bytes.
		return nil, fmt.Errorf("%w: %d samples of no bytes each in a %d-byte file", ErrFormat, h.NumSamples, size)
	}
	heapOff := descEnd + h.NumSamples*rows
	if heapOff > size {
		return nil, fmt.Errorf("%w: metadata table for %d samples ends at byte %d, past the end of the file (%d bytes)", ErrFormat, h.NumSamples, heapOff, size)
	}
	if h.AllocTablePtr < heapOff || h.AllocTablePtr > size {
		return nil, fmt.Errorf("%w: allocation table at byte %d lies outside [%d, %d]", ErrFormat, h.AllocTablePtr, heapOff, size)
	}
	if (size-h.AllocTablePtr)%AllocEntrySize != 0 {
		return nil, fmt.Errorf("%w: allocation table of %d bytes is not a whole number of %d-byte entries (truncated file?)", ErrFormat, size-h.AllocTablePtr, AllocEntrySize)
	}
	// FFCV's writer (and ours) records exactly one allocation per heap field of
	// every sample; custom fields may allocate any number of times.
	heapFields, hasCustom := uint64(0), false
	for _, d := range r.Fields {
		switch d.Type {
		case field.Bytes, field.JSON, field.NDArray, field.TorchTensor, field.RGBImage, field.Ragged, field.Mask, field.Text, field.Video, field.Audio:
			heapFields++
		case field.Custom:
			hasCustom = true
		}
	}
	numAllocs := (size - h.AllocTablePtr) / AllocEntrySize
	if want := h.NumSamples * heapFields; !hasCustom && numAllocs != want {
		return nil, fmt.Errorf("%w: allocation table has %d entries, %d samples with %d heap fields need %d (truncated file?)", ErrFormat, numAllocs, h.NumSamples, heapFields, want)
	}
	r.spans = []span{{base: 0, heapStart: heapOff, heapEnd: h.AllocTablePtr}}
	if r.meta, err = table(descEnd, heapOff-descEnd); err != nil {
		return nil, fmt.Errorf("metadata table: %w", err)
	}
	if r.allocs, err = table(h.AllocTablePtr, size-h.AllocTablePtr); err != nil {
		return nil, fmt.Errorf("allocation table: %w", err)
	}
	return r, nil
}

// Close unmaps the file and frees the tables (of every shard). Slices
// obtained from the Reader must not be used after.
func (r *Reader) Close() error {
	if r.release == nil {
		return nil
	}
	err := r.release()
	r.release, r.data, r.meta, r.allocs, r.src = nil, nil, nil, nil, nil
	return err
}

// ReadAt reads the address space through the source (not the map): for
// caches that manage their own copies of pages.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if r.src == nil {
		return 0, fmt.Errorf("%s: reader is closed", r.Path)
	}
	return r.src.ReadAt(p, off)
}

// Source is what ReadAt reads: the file, a remote object (OpenAt), or the
// joined shards' reader.
func (r *Reader) Source() io.ReaderAt { return r.src }

// NumSamples is the number of samples in the file.
func (r *Reader) NumSamples() uint64 { return r.Header.NumSamples }

// PageSize is the heap page size.
func (r *Reader) PageSize() uint64 { return uint64(r.Header.PageSize) }

// Mapped reports whether heap bytes can be read through the memory map
// (Heap, Read, Data, the OS cache).
func (r *Reader) Mapped() bool { return r.data != nil }

// Data is the whole mapped address space (one file: the file).
func (r *Reader) Data() ([]byte, error) {
	if r.data == nil {
		return nil, fmt.Errorf("%s: %w", r.Path, ErrNotMapped)
	}
	return r.data, nil
}

// Metadata is the metadata table; AllocTable the allocation table.
func (r *Reader) Metadata() []byte   { return r.meta }
func (r *Reader) AllocTable() []byte { return r.allocs }

// MetadataOffset is the file offset of the metadata table.
func (r *Reader) MetadataOffset() uint64 { return r.metaOff }

// FieldIndex returns the index of the named field, or -1.
func (r *Reader) FieldIndex(name string) int {
	for i, f := range r.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// Column returns the metadata column bytes of field f for sample i.
func (r *Reader) Column(i uint64, f int) ([]byte, error) {
	if i >= r.Header.NumSamples {
		return nil, fmt.Errorf("sample %d out of range [0, %d)", i, r.Header.NumSamples)
	}
	off := i*uint64(r.Layout.RowSize) + uint64(r.Layout.Offsets[f])
	return r.meta[off : off+uint64(r.Layout.Columns[f].Size)], nil
}

// spanOf returns the span of the file holding byte off of the address space.
func (r *Reader) spanOf(off uint64) *span {
	s := r.spans
	if len(s) == 1 {
		return &s[0]
	}
	return &s[r.spanIndex(off)]
}

// CheckHeap checks that size bytes at ptr lie in the heap and within one
// page, as every allocation must.
func (r *Reader) CheckHeap(ptr, size uint64) error {
	s := r.spanOf(ptr)
	if size == 0 && ptr >= s.base && ptr <= s.heapEnd {
		// FFCV gives an empty allocation made before its writer opened a
		// page the pointer (first page - 1) * page_size, often 0: inside the
		// header. Nothing is read, so any in-file pointer is fine.
		return nil
	}
	end := ptr + size
	if end < ptr || ptr < s.heapStart || end > s.heapEnd {
		return fmt.Errorf("%w: heap range [%d, %d) lies outside the heap [%d, %d)", ErrFormat, ptr, end, s.heapStart, s.heapEnd)
	}
	if size > 0 && ptr/r.PageSize() != (end-1)/r.PageSize() {
		return fmt.Errorf("%w: heap range [%d, %d) spans pages", ErrFormat, ptr, end)
	}
	return nil
}

// Heap returns size bytes at offset ptr of the map, checked by CheckHeap.
func (r *Reader) Heap(ptr, size uint64) ([]byte, error) {
	if err := r.CheckHeap(ptr, size); err != nil {
		return nil, err
	}
	if r.data == nil {
		return nil, fmt.Errorf("%s: %w", r.Path, ErrNotMapped)
	}
	return r.data[ptr : ptr+size : ptr+size], nil
}

// PageRange returns the bytes [start, end) of the address space that heap
// page p covers: the page, cut at the end of its file's heap.
func (r *Reader) PageRange(p uint64) (start, end uint64, err error) {
	ps := r.PageSize()
	if p > math.MaxUint64/ps-1 {
		return 0, 0, fmt.Errorf("page %d lies outside the heap", p)
	}
	start = p * ps
	s := r.spanOf(start)
	end = min(start+ps, s.heapEnd)
	if start >= end {
		return 0, 0, fmt.Errorf("page %d lies outside the heap", p)
	}
	return start, end, nil
}

// NumAllocs is the number of allocation table entries.
func (r *Reader) NumAllocs() uint64 {
	return uint64(len(r.allocs)) / AllocEntrySize
}

// Alloc returns allocation table entry k.
func (r *Reader) Alloc(k uint64) AllocEntry {
	b := r.allocs[k*AllocEntrySize:]
	return AllocEntry{
		SampleID: binary.LittleEndian.Uint64(b),
		Ptr:      binary.LittleEndian.Uint64(b[8:]),
		Size:     binary.LittleEndian.Uint64(b[16:]),
	}
}

// AllocSize returns the size of the allocation starting at ptr, as FFCV's
// memory managers look it up. The sorted index is built on first use.
func (r *Reader) AllocSize(ptr uint64) (uint64, error) {
	r.allocOnce.Do(r.indexAllocs)
	if r.allocErr != nil {
		return 0, r.allocErr
	}
	i := sort.Search(len(r.allocPtrs), func(i int) bool { return r.allocPtrs[i] >= ptr })
	if i == len(r.allocPtrs) || r.allocPtrs[i] != ptr {
		return 0, fmt.Errorf("%w: no allocation starts at byte %d", ErrFormat, ptr)
	}
	return r.allocSizes[r.pick(i)], nil
}

// pick chooses among the allocations starting where entry i (the first of
// its pointer) does: zero-size allocations may share a pointer with the
// next one, so the first non-empty one wins.
func (r *Reader) pick(i int) int {
	ptr := r.allocPtrs[i]
	for ; i+1 < len(r.allocPtrs) && r.allocPtrs[i+1] == ptr; i++ {
		if r.allocSizes[i] > 0 {
			return i
		}
	}
	return i
}

// AllocIndex returns every distinct allocation pointer, sorted, with the
// size AllocSize gives it: the one lookup table for callers that search it
// themselves (Python's memory_read).
func (r *Reader) AllocIndex() (ptrs, sizes []uint64, err error) {
	r.allocOnce.Do(r.indexAllocs)
	if r.allocErr != nil {
		return nil, nil, r.allocErr
	}
	for i := 0; i < len(r.allocPtrs); i++ {
		if i > 0 && r.allocPtrs[i] == r.allocPtrs[i-1] {
			continue
		}
		ptrs, sizes = append(ptrs, r.allocPtrs[i]), append(sizes, r.allocSizes[r.pick(i)])
	}
	return ptrs, sizes, nil
}

// AllocPages returns the distinct (sample, page) pairs of the allocation
// table, sorted by sample then page, where an allocation's page is the one
// it starts on (pointer / page size): FFCV's memory managers' page maps.
func (r *Reader) AllocPages() (samples, pages []uint64, err error) {
	r.allocOnce.Do(r.indexAllocs)
	if r.allocErr != nil {
		return nil, nil, r.allocErr
	}
	n := r.NumAllocs()
	pairs := make([][2]uint64, n)
	ps := r.PageSize()
	for k := range pairs {
		e := r.Alloc(uint64(k))
		pairs[k] = [2]uint64{e.SampleID, e.Ptr / ps}
	}
	// Both fields in order, so slices.Compact leaves distinct pairs; the
	// check skips the sort for a table already in sample order.
	cmpPair := func(a, b [2]uint64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }
	if !slices.IsSortedFunc(pairs, cmpPair) {
		slices.SortFunc(pairs, cmpPair)
	}
	pairs = slices.Compact(pairs)
	samples, pages = make([]uint64, len(pairs)), make([]uint64, len(pairs))
	for k, p := range pairs {
		samples[k], pages[k] = p[0], p[1]
	}
	return samples, pages, nil
}

func (r *Reader) indexAllocs() {
	n := r.NumAllocs()
	entries := make([]AllocEntry, n)
	for k := range entries {
		e := r.Alloc(uint64(k))
		if err := r.CheckHeap(e.Ptr, e.Size); err != nil {
			r.allocErr = fmt.Errorf("%w: allocation table entry %d (sample %d): %v", ErrFormat, k, e.SampleID, err)
			return
		}
		entries[k] = e
	}
	less := func(a, b int) bool {
		if entries[a].Ptr != entries[b].Ptr {
			return entries[a].Ptr < entries[b].Ptr
		}
		return entries[a].Size < entries[b].Size
	}
	// Writers emit the table in placement order, so it is usually sorted
	// already; checking is much cheaper than sorting millions of entries.
	if !sort.SliceIsSorted(entries, less) {
		sort.Slice(entries, less)
	}
	r.allocPtrs = make([]uint64, n)
	r.allocSizes = make([]uint64, n)
	for k, e := range entries {
		r.allocPtrs[k], r.allocSizes[k] = e.Ptr, e.Size
	}
}
