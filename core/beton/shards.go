package beton

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// ErrShards is wrapped by every error about shards that cannot be read as
// one dataset.
var ErrShards = errors.New("shards cannot be read as one dataset")

// Join reads shards, .beton files with one set of fields (names, types,
// arguments) and one page size, as one dataset named name: sample indices
// follow shard order. Its metadata and allocation tables are the shards'
// tables concatenated in memory, with every heap pointer moved into one
// address space where shard k starts at base k, a multiple of the page size,
// so a page never spans shards and caches, orders and pipelines see one
// Reader. If every shard is a mapped file, the files are mapped again at
// their bases in one region, so Heap, Data and the OS cache work as for one
// file; else heap bytes come only through ReadAt, which goes to the shard.
//
// Custom fields (type 255) hold pointers where only their Python handler
// knows, so shards with them are refused. On success the Reader owns the
// shards (Close closes them); on error the caller still does.
func Join(name string, shards []*Reader) (*Reader, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("%s: %w: no shards", name, ErrShards)
	}
	first := shards[0]
	for _, s := range shards {
		if len(s.spans) != 1 {
			return nil, fmt.Errorf("%s: %w: %s is already a set of shards", name, ErrShards, s.Path)
		}
		if err := sameFields(first, s); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrShards, err)
		}
	}
	for _, d := range first.Fields {
		if d.Type == field.Custom && len(shards) > 1 {
			return nil, fmt.Errorf("%s: %w: field %q is a custom field, whose heap pointers only its Python handler can find, so they cannot be moved into one address space; write one file", name, ErrShards, d.Name)
		}
	}

	ps := first.PageSize()
	r := &Reader{Path: name, Header: first.Header, Fields: first.Fields, Layout: first.Layout, metaOff: first.metaOff}
	r.Header.NumSamples, r.spans, r.starts = 0, make([]span, len(shards)), make([]uint64, len(shards))
	numAllocs, base := uint64(0), uint64(0)
	for k, s := range shards {
		if k > 0 {
			if base > math.MaxUint64-s.size-ps {
				return nil, fmt.Errorf("%s: %w: more than 2^64 bytes in all", name, ErrShards)
			}
			base = (base + ps - 1) / ps * ps
		}
		r.spans[k] = span{base: base, heapStart: base + s.spans[0].heapStart, heapEnd: base + s.spans[0].heapEnd}
		r.starts[k] = r.Header.NumSamples
		r.Header.NumSamples += s.NumSamples()
		numAllocs += s.NumAllocs()
		base += s.size
	}
	r.size = base
	r.Header.AllocTablePtr = r.spans[len(shards)-1].heapEnd // the end of the heap

	var err error
	if r.meta, err = allocMem(uint64(r.Layout.RowSize) * r.Header.NumSamples); err == nil {
		r.allocs, err = allocMem(numAllocs * AllocEntrySize)
	}
	if err != nil {
		freeMem(r.meta)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.rebase(shards)
	if r.data, err = mapShards(shards, r.spans, r.size); err != nil {
		freeMem(r.meta)
		freeMem(r.allocs)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.shards, r.src = shards, joined{r}
	r.release = func() error {
		if r.data != nil {
			unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(r.data)), uintptr(len(r.data)))
		}
		freeMem(r.meta)
		freeMem(r.allocs)
		var errs []error
		for _, s := range shards {
			errs = append(errs, s.Close())
		}
		return errors.Join(errs...)
	}
	return r, nil
}

// sameFields reports the first difference between the fields of a and b.
func sameFields(a, b *Reader) error {
	if a.PageSize() != b.PageSize() {
		return fmt.Errorf("%s: page size %d, %s has %d", b.Path, b.PageSize(), a.Path, a.PageSize())
	}
	for i := range max(len(a.Fields), len(b.Fields)) {
		if i >= len(b.Fields) {
			return fmt.Errorf("%s: no field %d (%q of %s)", b.Path, i, a.Fields[i].Name, a.Path)
		}
		if i >= len(a.Fields) {
			return fmt.Errorf("%s: field %d %q, which %s does not have", b.Path, i, b.Fields[i].Name, a.Path)
		}
		x, y := &a.Fields[i], &b.Fields[i]
		if x.Name != y.Name || x.Type != y.Type || x.DType != y.DType || !slices.Equal(x.Shape, y.Shape) || !bytes.Equal(x.Args, y.Args) {
			return fmt.Errorf("%s: field %d is %s, %s has %s", b.Path, i, describe(y), a.Path, describe(x))
		}
	}
	return nil
}

func describe(d *field.Desc) string {
	s := fmt.Sprintf("%q (%v", d.Name, d.Type)
	if d.Arrays() {
		s += fmt.Sprintf(" %s %v", d.DType, d.Shape)
	}
	if len(d.Args) > 0 {
		s += " with other arguments"
	}
	return s + ")"
}

// rebase fills r's tables from the shards': pointers move by their shard's
// base and sample ids by its first sample. A pointer past its shard's end
// (a corrupt file) is made one that no heap check accepts, rather than one
// into the next shard.
func (r *Reader) rebase(shards []*Reader) {
	var ptrCols []int // offsets of the heap pointers in a row
	for f, d := range r.Fields {
		if off, ok := field.HeapPtrOffset(d.Type); ok {
			ptrCols = append(ptrCols, r.Layout.Offsets[f]+off)
		}
	}
	move := func(b []byte, k int) {
		p := binary.LittleEndian.Uint64(b)
		if p >= shards[k].size {
			p = math.MaxUint64
		} else {
			p += r.spans[k].base
		}
		binary.LittleEndian.PutUint64(b, p)
	}
	rowSize := r.Layout.RowSize
	meta, allocs := r.meta, r.allocs
	for k, s := range shards {
		n := copy(meta, s.meta)
		for row := 0; row+rowSize <= n && rowSize > 0; row += rowSize {
			for _, c := range ptrCols {
				move(meta[row+c:], k)
			}
		}
		meta = meta[n:]
		n = copy(allocs, s.allocs)
		for e := 0; e < n; e += AllocEntrySize {
			binary.LittleEndian.PutUint64(allocs[e:], binary.LittleEndian.Uint64(allocs[e:])+r.starts[k])
			move(allocs[e+8:], k)
		}
		allocs = allocs[n:]
	}
}

// mapShards maps every shard's file at its base in one region of size
// bytes; nil if a shard has no file. The gaps between files read as zeros
// (never touched through checked pointers, but a stray read of Python's view
// of the region gets zeros, not a crash).
func mapShards(shards []*Reader, spans []span, size uint64) ([]byte, error) {
	for _, s := range shards {
		if s.file == nil {
			return nil, nil
		}
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%d bytes do not fit in the address space", size)
	}
	region, err := unix.MmapPtr(-1, 0, nil, uintptr(size), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserve %d bytes of address space: %w", size, err)
	}
	for k, s := range shards {
		at := unsafe.Add(region, spans[k].base)
		if _, err := unix.MmapPtr(int(s.file.Fd()), 0, at, uintptr(s.size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
			unix.MunmapPtr(region, uintptr(size))
			return nil, fmt.Errorf("mmap %s: %w", s.Path, err)
		}
	}
	return unsafe.Slice((*byte)(region), size), nil
}

// joined reads the address space of joined shards from the shards.
type joined struct{ r *Reader }

func (j joined) ReadAt(p []byte, off int64) (int, error) {
	k := j.r.spanIndex(uint64(off))
	s := j.r.spans[k]
	if uint64(off)+uint64(len(p)) > s.base+j.r.shards[k].size {
		return 0, fmt.Errorf("read of [%d, %d) crosses the end of shard %s", off, off+int64(len(p)), j.r.shards[k].Path)
	}
	return j.r.shards[k].ReadAt(p, off-int64(s.base))
}

func (r *Reader) spanIndex(off uint64) int {
	return max(sort.Search(len(r.spans), func(k int) bool { return r.spans[k].base > off })-1, 0)
}

// Shards returns the joined shards (nil for one file).
func (r *Reader) Shards() []*Reader { return r.shards }

// ShardOf returns the shard of sample i and its index there (one file: 0, i).
func (r *Reader) ShardOf(i uint64) (k int, local uint64) {
	if r.starts == nil {
		return 0, i
	}
	// The last shard starting at or before i: empty shards before it share its start.
	k = max(sort.Search(len(r.starts), func(k int) bool { return r.starts[k] > i })-1, 0)
	return k, i - r.starts[k]
}

// where names sample i for errors: its file, and its shard if joined.
func (r *Reader) where(i uint64) string {
	if r.shards == nil {
		return fmt.Sprintf("%s: sample %d", r.Path, i)
	}
	k, local := r.ShardOf(i)
	return fmt.Sprintf("%s: sample %d (sample %d of shard %s)", r.Path, i, local, r.shards[k].Path)
}
