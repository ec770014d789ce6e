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
	return JoinWith(name, shards, JoinOptions{})
}

// JoinOptions shape the dataset JoinWith makes of its shards: which of
// their fields it has and under which names, an added field saying where
// each sample comes from, and whether page sizes may differ. The zero
// value is Join's: every field, as the shards name them, one page size.
type JoinOptions struct {
	// Fields, if not nil, picks each shard's fields: Fields[k][j] is the
	// index in shard k of joined field j. The picked fields must agree
	// between shards in everything but their names; joined field j takes
	// shard 0's descriptor.
	Fields [][]int
	// Names are the joined fields' names (nil: shard 0's names).
	Names []string
	// Tag, if not empty, adds a last field, an IntField of that name whose
	// value is Tags[k] for every sample of shard k. It lives in the
	// metadata table only: reading it costs no heap access.
	Tag  string
	Tags []int64
	// MixedPageSizes lets page sizes differ. The joined page is the
	// largest: page sizes are powers of two and shards start at multiples
	// of it, so every page of a shard lies within one joined page.
	MixedPageSizes bool
	// Labels, if not nil, say whose each shard is in errors about its
	// samples ("source 1 (web)"): Labels[k] is shard k's.
	Labels []string
}

// JoinWith is Join shaped by opts (see JoinOptions).
func JoinWith(name string, shards []*Reader, opts JoinOptions) (*Reader, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("%s: %w: no shards", name, ErrShards)
	}
	if opts.Labels != nil && len(opts.Labels) != len(shards) {
		return nil, fmt.Errorf("%s: %w: %d labels for %d shards", name, ErrShards, len(opts.Labels), len(shards))
	}
	first := shards[0]
	fields, layout, err := joinedFields(name, shards, opts)
	if err != nil {
		return nil, err
	}
	ps := first.PageSize()
	for _, s := range shards {
		if len(s.spans) != 1 {
			return nil, fmt.Errorf("%s: %w: %s is already a set of shards", name, ErrShards, s.Path)
		}
		if opts.MixedPageSizes {
			ps = max(ps, s.PageSize())
		} else if s.PageSize() != ps {
			return nil, fmt.Errorf("%w: %s: page size %d, %s has %d", ErrShards, s.Path, s.PageSize(), first.Path, ps)
		}
	}
	for _, d := range fields {
		if d.Type == field.Custom && len(shards) > 1 {
			return nil, fmt.Errorf("%s: %w: field %q is a custom field, whose heap pointers only its Python handler can find, so they cannot be moved into one address space; write one file", name, ErrShards, d.Name)
		}
	}

	r := &Reader{Path: name, Header: first.Header, Fields: fields, Layout: layout, metaOff: first.metaOff}
	r.Header.NumFields, r.Header.PageSize = uint16(len(fields)), uint32(ps)
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

	if r.meta, err = allocMem(uint64(r.Layout.RowSize) * r.Header.NumSamples); err == nil {
		r.allocs, err = allocMem(numAllocs * AllocEntrySize)
	}
	if err != nil {
		freeMem(r.meta)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.rebase(shards, opts)
	if r.data, err = mapShards(shards, r.spans, r.size); err != nil {
		freeMem(r.meta)
		freeMem(r.allocs)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r.shards, r.src, r.labels = shards, joined{r}, opts.Labels
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

// joinedFields checks that the shards' fields agree as opts picks them and
// returns the joined fields and their row layout.
func joinedFields(name string, shards []*Reader, opts JoinOptions) ([]field.Desc, field.Layout, error) {
	first := shards[0]
	if opts.Fields == nil {
		// Every field, in order: the shards must name them alike too.
		for _, s := range shards[1:] {
			if err := sameFields(first, s); err != nil {
				return nil, field.Layout{}, fmt.Errorf("%w: %v", ErrShards, err)
			}
		}
		if opts.Names == nil && opts.Tag == "" {
			return first.Fields, first.Layout, nil
		}
	}
	pick := opts.Fields
	if pick == nil {
		all := make([]int, len(first.Fields))
		for j := range all {
			all[j] = j
		}
		pick = make([][]int, len(shards))
		for k := range pick {
			pick[k] = all
		}
	}
	if len(pick) != len(shards) {
		return nil, field.Layout{}, fmt.Errorf("%s: %w: fields picked for %d shards, there are %d", name, ErrShards, len(pick), len(shards))
	}
	n := len(pick[0])
	if opts.Names != nil && len(opts.Names) != n {
		return nil, field.Layout{}, fmt.Errorf("%s: %w: %d names for %d fields", name, ErrShards, len(opts.Names), n)
	}
	fields := make([]field.Desc, 0, n+1)
	custom := map[string]field.Column{} // custom fields keep their column
	seen := map[string]bool{}
	for j := range n {
		for k, s := range shards {
			if len(pick[k]) != n {
				return nil, field.Layout{}, fmt.Errorf("%w: %s: %d fields picked, %s has %d", ErrShards, s.Path, len(pick[k]), first.Path, n)
			}
			if f := pick[k][j]; f < 0 || f >= len(s.Fields) {
				return nil, field.Layout{}, fmt.Errorf("%w: %s: no field %d", ErrShards, s.Path, f)
			}
		}
		d := first.Fields[pick[0][j]]
		if opts.Names != nil {
			d.Name = opts.Names[j]
		}
		if seen[d.Name] {
			return nil, field.Layout{}, fmt.Errorf("%s: %w: two fields named %q", name, ErrShards, d.Name)
		}
		seen[d.Name] = true
		for k, s := range shards[1:] {
			x, y := &first.Fields[pick[0][j]], &s.Fields[pick[k+1][j]]
			if !SameKind(x, y) || s.Layout.Columns[pick[k+1][j]] != first.Layout.Columns[pick[0][j]] {
				return nil, field.Layout{}, fmt.Errorf("%w: %s: field %q is %s, %s has %s", ErrShards, s.Path, d.Name,
					describe(y), first.Path, describe(x))
			}
		}
		if d.Type == field.Custom {
			custom[d.Name] = first.Layout.Columns[pick[0][j]]
		}
		fields = append(fields, d)
	}
	if opts.Tag != "" {
		if seen[opts.Tag] {
			return nil, field.Layout{}, fmt.Errorf("%s: %w: the tag field %q is also a field of the shards", name, ErrShards, opts.Tag)
		}
		if len(opts.Tags) != len(shards) {
			return nil, field.Layout{}, fmt.Errorf("%s: %w: %d tags for %d shards", name, ErrShards, len(opts.Tags), len(shards))
		}
		fields = append(fields, field.Desc{Type: field.Int, Name: opts.Tag})
	}
	layout, err := field.NewLayout(fields, custom)
	if err != nil {
		return nil, field.Layout{}, fmt.Errorf("%s: %w", name, err)
	}
	return fields, layout, nil
}

// sameFields reports the first difference between the fields of a and b.
func sameFields(a, b *Reader) error {
	for i := range max(len(a.Fields), len(b.Fields)) {
		if i >= len(b.Fields) {
			return fmt.Errorf("%s: no field %d (%q of %s)", b.Path, i, a.Fields[i].Name, a.Path)
		}
		if i >= len(a.Fields) {
			return fmt.Errorf("%s: field %d %q, which %s does not have", b.Path, i, b.Fields[i].Name, a.Path)
		}
		x, y := &a.Fields[i], &b.Fields[i]
		if x.Name != y.Name || !SameKind(x, y) {
			return fmt.Errorf("%s: field %d is %s, %s has %s", b.Path, i, describe(y), a.Path, describe(x))
		}
	}
	return nil
}

// SameKind reports whether two fields hold the same kind of value: all of
// their descriptors but the names agree.
func SameKind(x, y *field.Desc) bool {
	return x.Type == y.Type && x.DType == y.DType && slices.Equal(x.Shape, y.Shape) && bytes.Equal(x.Args, y.Args)
}

// Describe names a field and its kind, for errors: "label" (IntField),
// "arr" (NDArrayField <f4 [3]).
func Describe(d *field.Desc) string { return describe(d) }

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
// into the next shard. Rows are copied whole when r keeps the shards'
// layout, column by column when opts picks fields or adds a tag.
func (r *Reader) rebase(shards []*Reader, opts JoinOptions) {
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
		n := int(s.NumSamples()) * rowSize
		if opts.Fields == nil && opts.Tag == "" {
			copy(meta, s.meta)
		} else {
			r.project(meta[:n], s, k, opts)
		}
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

// project writes shard k's rows into dst in r's layout: the columns opts
// picks (every one, in order, if it picks none) and the tag.
func (r *Reader) project(dst []byte, s *Reader, k int, opts JoinOptions) {
	rowSize, srcRow := r.Layout.RowSize, s.Layout.RowSize
	n := len(r.Fields)
	if opts.Tag != "" {
		n--
	}
	for i := range int(s.NumSamples()) {
		out, in := dst[i*rowSize:(i+1)*rowSize], s.meta[i*srcRow:(i+1)*srcRow]
		for j := range n {
			f := j
			if opts.Fields != nil {
				f = opts.Fields[k][j]
			}
			off := s.Layout.Offsets[f]
			copy(out[r.Layout.Offsets[j]:], in[off:off+s.Layout.Columns[f].Size])
		}
		if opts.Tag != "" {
			binary.LittleEndian.PutUint64(out[r.Layout.Offsets[n]:], uint64(opts.Tags[k]))
		}
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

// ShardRange returns the bytes [start, end) of the address space that shard
// k's file takes (one file: 0 and its size).
func (r *Reader) ShardRange(k int) (start, end uint64) {
	if r.shards == nil {
		return 0, r.size
	}
	return r.spans[k].base, r.spans[k].base + r.shards[k].size
}

// ShardAt returns the shard holding byte off of the address space (one
// file: 0).
func (r *Reader) ShardAt(off uint64) int {
	if r.shards == nil {
		return 0
	}
	return r.spanIndex(off)
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

// Where names sample i for errors: "file: sample i", and for joined shards
// also the shard's file and the sample's index there.
func (r *Reader) Where(i uint64) string { return r.where(i) }

// where names sample i for errors: its file, and its shard if joined.
func (r *Reader) where(i uint64) string {
	if r.shards == nil {
		return fmt.Sprintf("%s: sample %d", r.Path, i)
	}
	k, local := r.ShardOf(i)
	if r.labels != nil {
		return fmt.Sprintf("%s: %s: sample %d (sample %d of the %s)", r.labels[k], r.shards[k].Path, local, i, r.Path)
	}
	return fmt.Sprintf("%s: sample %d (sample %d of shard %s)", r.Path, i, local, r.shards[k].Path)
}
