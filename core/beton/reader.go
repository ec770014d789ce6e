package beton

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"sort"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// Reader gives read access to a .beton file through a read-only memory map.
// Open validates the header, descriptors and table bounds; rows and heap
// pointers are checked when they are read, so opening a file of any size is
// cheap. A Reader is safe for concurrent use.
type Reader struct {
	Path   string
	Header Header
	Fields []field.Desc
	Layout field.Layout

	data       []byte   // the whole file, mapped
	file       *os.File // kept open: the process cache reads this file, even if path is replaced
	metaOff    uint64   // M0
	heapOff    uint64   // first byte after the metadata table
	allocOnce  sync.Once
	allocPtrs  []uint64 // allocation pointers, sorted, built on first lookup
	allocSizes []uint64
	allocErr   error
}

// Open maps path and validates its structure. custom gives the metadata
// column of each custom field (type_id 255), by field name.
func Open(path string, custom map[string]field.Column) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := openFile(path, f, st, custom)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.file = f
	return r, nil
}

func openFile(path string, f *os.File, st os.FileInfo, custom map[string]field.Column) (*Reader, error) {
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
	return r, nil
}

// newReader validates data as a .beton image; it does not own data on error.
func newReader(path string, data []byte, custom map[string]field.Column) (*Reader, error) {
	h, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	r := &Reader{Path: path, Header: h, data: data}
	size := uint64(len(data))
	descEnd := uint64(HeaderSize) + uint64(h.NumFields)*field.DescriptorSize
	if descEnd > size {
		return nil, fmt.Errorf("%w: %d field descriptors end at byte %d, past the end of the file (%d bytes)", ErrFormat, h.NumFields, descEnd, size)
	}
	seen := map[string]bool{}
	for i := 0; i < int(h.NumFields); i++ {
		off := HeaderSize + i*field.DescriptorSize
		d, err := field.ParseDesc(data[off : off+field.DescriptorSize])
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
	r.heapOff = descEnd + h.NumSamples*rows
	if r.heapOff > size {
		return nil, fmt.Errorf("%w: metadata table for %d samples ends at byte %d, past the end of the file (%d bytes)", ErrFormat, h.NumSamples, r.heapOff, size)
	}
	if h.AllocTablePtr < r.heapOff || h.AllocTablePtr > size {
		return nil, fmt.Errorf("%w: allocation table at byte %d lies outside [%d, %d]", ErrFormat, h.AllocTablePtr, r.heapOff, size)
	}
	if (size-h.AllocTablePtr)%AllocEntrySize != 0 {
		return nil, fmt.Errorf("%w: allocation table of %d bytes is not a whole number of %d-byte entries (truncated file?)", ErrFormat, size-h.AllocTablePtr, AllocEntrySize)
	}
	// FFCV's writer (and ours) records exactly one allocation per heap field of
	// every sample; custom fields may allocate any number of times.
	heapFields, hasCustom := uint64(0), false
	for _, d := range r.Fields {
		switch d.Type {
		case field.Bytes, field.JSON, field.NDArray, field.TorchTensor, field.RGBImage:
			heapFields++
		case field.Custom:
			hasCustom = true
		}
	}
	if want := h.NumSamples * heapFields; !hasCustom && r.NumAllocs() != want {
		return nil, fmt.Errorf("%w: allocation table has %d entries, %d samples with %d heap fields need %d (truncated file?)", ErrFormat, r.NumAllocs(), h.NumSamples, heapFields, want)
	}
	return r, nil
}

// Close unmaps the file. Slices obtained from the Reader must not be used after.
func (r *Reader) Close() error {
	if r.data == nil {
		return nil
	}
	err := unix.Munmap(r.data)
	r.data = nil
	if r.file != nil {
		r.file.Close()
	}
	return err
}

// ReadAt reads from the opened file (not the map): for caches that manage
// their own copies of pages.
func (r *Reader) ReadAt(p []byte, off int64) (int, error) {
	if r.file == nil {
		return 0, fmt.Errorf("%s: reader has no open file", r.Path)
	}
	return r.file.ReadAt(p, off)
}

// NumSamples is the number of samples in the file.
func (r *Reader) NumSamples() uint64 { return r.Header.NumSamples }

// PageSize is the heap page size.
func (r *Reader) PageSize() uint64 { return uint64(r.Header.PageSize) }

// Data is the whole mapped file.
func (r *Reader) Data() []byte { return r.data }

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
	off := r.metaOff + i*uint64(r.Layout.RowSize) + uint64(r.Layout.Offsets[f])
	return r.data[off : off+uint64(r.Layout.Columns[f].Size)], nil
}

// Heap returns size bytes at absolute offset ptr, checking that they lie in the
// heap and within one page, as every allocation must.
func (r *Reader) Heap(ptr, size uint64) ([]byte, error) {
	if size == 0 && ptr <= r.Header.AllocTablePtr {
		// FFCV gives an empty allocation made before its writer opened a
		// page the pointer (first page - 1) * page_size, often 0: inside the
		// header. Nothing is read, so any in-file pointer is fine.
		return r.data[ptr:ptr:ptr], nil
	}
	end := ptr + size
	if end < ptr || ptr < r.heapOff || end > r.Header.AllocTablePtr {
		return nil, fmt.Errorf("%w: heap range [%d, %d) lies outside the heap [%d, %d)", ErrFormat, ptr, end, r.heapOff, r.Header.AllocTablePtr)
	}
	if size > 0 && ptr/r.PageSize() != (end-1)/r.PageSize() {
		return nil, fmt.Errorf("%w: heap range [%d, %d) spans pages", ErrFormat, ptr, end)
	}
	return r.data[ptr:end:end], nil
}

// NumAllocs is the number of allocation table entries.
func (r *Reader) NumAllocs() uint64 {
	return (uint64(len(r.data)) - r.Header.AllocTablePtr) / AllocEntrySize
}

// Alloc returns allocation table entry k.
func (r *Reader) Alloc(k uint64) AllocEntry {
	b := r.data[r.Header.AllocTablePtr+k*AllocEntrySize:]
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

func (r *Reader) indexAllocs() {
	n := r.NumAllocs()
	entries := make([]AllocEntry, n)
	for k := range entries {
		e := r.Alloc(uint64(k))
		if _, err := r.Heap(e.Ptr, e.Size); err != nil {
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
