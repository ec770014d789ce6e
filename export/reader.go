package main

/*
#define FFCV_GO_TYPES_ONLY
#include "ffcv_go.h"
*/
import "C"

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/order"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// parseCustom reads {"name": [size, align]} into column layouts.
func parseCustom(s *C.char) (map[string]field.Column, error) {
	if s == nil {
		return nil, nil
	}
	var raw map[string][2]int
	if err := json.Unmarshal([]byte(C.GoString(s)), &raw); err != nil {
		return nil, fmt.Errorf("%w: custom fields: %v", errArgument, err)
	}
	out := map[string]field.Column{}
	for k, v := range raw {
		out[k] = field.Column{Size: v[0], Align: v[1]}
	}
	return out, nil
}

// readerRefs counts the users of each open reader: its handle and the
// loaders built on it. The file is unmapped when the last one lets go, so a
// loader outlives the Python Reader it was made from.
// A mixture's reader also owns the readers of its side sources (side),
// closed with it.
var readerRefs = struct {
	sync.Mutex
	n    map[*beton.Reader]int
	side map[*beton.Reader][]*beton.Reader
}{n: map[*beton.Reader]int{}, side: map[*beton.Reader][]*beton.Reader{}}

// retainReader counts a user of r; side, given once (by the mixture's
// handle), are the readers r owns.
func retainReader(r *beton.Reader, side ...*beton.Reader) {
	readerRefs.Lock()
	readerRefs.n[r]++
	if side != nil {
		readerRefs.side[r] = side
	}
	readerRefs.Unlock()
}

func releaseReader(r *beton.Reader) error {
	readerRefs.Lock()
	readerRefs.n[r]--
	last := readerRefs.n[r] <= 0
	side := readerRefs.side[r]
	if last {
		delete(readerRefs.n, r)
		delete(readerRefs.side, r)
	}
	readerRefs.Unlock()
	if last {
		errs := []error{r.Close()}
		for _, s := range side {
			errs = append(errs, s.Close())
		}
		return errors.Join(errs...)
	}
	return nil
}

// readerHandle is what a reader handle holds: closing it releases one
// reference. A mixture's reader also holds the sources' parts, which its
// loaders read by, and every source as operations see them.
type readerHandle struct {
	*beton.Reader
	parts   []order.Part
	sources []pipeline.Source // every source, side ones too, for operations (AddNoise(source=))
}

func (h readerHandle) Close() error { return releaseReader(h.Reader) }

type fieldInfo struct {
	Name    string   `json:"name"`
	TypeID  int      `json:"type_id"`
	Offset  int      `json:"offset"`
	Size    int      `json:"size"`
	Shape   []uint64 `json:"shape"`
	DType   string   `json:"dtype"`
	ArgsHex string   `json:"args_hex,omitempty"`
}

type readerInfo struct {
	NumSamples     uint64      `json:"num_samples"`
	PageSize       uint64      `json:"page_size"`
	AllocTablePtr  uint64      `json:"alloc_table_ptr"`
	NumAllocs      uint64      `json:"num_allocs"`
	MetadataOffset uint64      `json:"metadata_offset"`
	RowSize        int         `json:"row_size"`
	Fields         []fieldInfo `json:"fields"`
	Mapped         bool        `json:"mapped"` // heap bytes can be read through the map
	Shards         []shardInfo `json:"shards"` // the files, in order (one for a single file)
}

type shardInfo struct {
	Path       string `json:"path"`
	NumSamples uint64 `json:"num_samples"`
}

//export ffcv_reader_info
func ffcv_reader_info(h C.int64_t, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	r, done, e := acquireReader(int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	info := readerInfo{
		NumSamples: r.NumSamples(), PageSize: r.PageSize(), AllocTablePtr: r.Header.AllocTablePtr,
		NumAllocs: r.NumAllocs(), MetadataOffset: r.MetadataOffset(), RowSize: r.Layout.RowSize,
		Mapped: r.Mapped(), Shards: []shardInfo{{r.Path, r.NumSamples()}},
	}
	if shards := r.Shards(); shards != nil {
		info.Shards = info.Shards[:0]
		for _, s := range shards {
			info.Shards = append(info.Shards, shardInfo{s.Path, s.NumSamples()})
		}
	}
	for i, f := range r.Fields {
		info.Fields = append(info.Fields, fieldInfo{
			Name: f.Name, TypeID: int(f.Type), Offset: r.Layout.Offsets[i], Size: r.Layout.Columns[i].Size,
			Shape: f.Shape, DType: f.DType, ArgsHex: hex.EncodeToString(f.Args),
		})
	}
	b, _ := json.Marshal(info)
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return 0
}

//export ffcv_reader_mmap
func ffcv_reader_mmap(h C.int64_t, data *unsafe.Pointer, n *C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	r, done, e := acquireReader(int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if data == nil || n == nil {
		return fail(err, errNil)
	}
	d, e := r.Data()
	if e != nil {
		return fail(err, e)
	}
	*data, *n = unsafe.Pointer(unsafe.SliceData(d)), C.uint64_t(len(d))
	return 0
}

//export ffcv_reader_tables
func ffcv_reader_tables(h C.int64_t, meta *unsafe.Pointer, metaLen *C.uint64_t, allocs *unsafe.Pointer,
	allocsLen *C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	r, done, e := acquireReader(int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if meta == nil || metaLen == nil || allocs == nil || allocsLen == nil {
		return fail(err, errNil)
	}
	m, a := r.Metadata(), r.AllocTable()
	*meta, *metaLen = unsafe.Pointer(unsafe.SliceData(m)), C.uint64_t(len(m))
	*allocs, *allocsLen = unsafe.Pointer(unsafe.SliceData(a)), C.uint64_t(len(a))
	if len(m) == 0 {
		*meta = nil
	}
	if len(a) == 0 {
		*allocs = nil
	}
	return 0
}

//export ffcv_reader_read
func ffcv_reader_read(h C.int64_t, sample C.uint64_t, f C.int32_t, col *unsafe.Pointer, colLen *C.uint64_t,
	heap *unsafe.Pointer, heapLen *C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	defer faultsPanic()()
	r, done, e := acquireReader(int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if col == nil || colLen == nil || heap == nil || heapLen == nil {
		return fail(err, errNil)
	}
	c, hp, e := r.Read(uint64(sample), int(f))
	if e != nil {
		return fail(err, e)
	}
	*col, *colLen = unsafe.Pointer(unsafe.SliceData(c)), C.uint64_t(len(c))
	*heap, *heapLen = nil, 0
	if hp != nil {
		*heap, *heapLen = unsafe.Pointer(unsafe.SliceData(hp)), C.uint64_t(len(hp))
	}
	return 0
}

// acquireReader returns the reader behind a reader handle (see acquire).
func acquireReader(h int64) (*beton.Reader, func(), error) {
	r, done, err := acquire[readerHandle](h)
	return r.Reader, done, err
}

// ffcv_file_fields describes the fields of the file at path (header and
// descriptors only), so a caller can give the column layouts of its custom
// fields to ffcv_dataset_open.
//
//export ffcv_file_fields
func ffcv_file_fields(path *C.char, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	p, e := goString(path, "path")
	if e != nil {
		return fail(err, e)
	}
	descs, e := beton.ReadDescs(p)
	if e != nil {
		return fail(err, e)
	}
	fields := []fieldInfo{}
	for _, f := range descs {
		fields = append(fields, fieldInfo{Name: f.Name, TypeID: int(f.Type), Shape: f.Shape, DType: f.DType,
			ArgsHex: hex.EncodeToString(f.Args)})
	}
	b, _ := json.Marshal(fields)
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return 0
}

// ffcv_reader_allocs writes the reader's allocation index (distinct pointers,
// sorted, and their sizes as the Go reader resolves them) into ptrs and sizes,
// up to capacity entries (both may be NULL to ask for the count).
//
//export ffcv_reader_allocs
func ffcv_reader_allocs(h C.int64_t, ptrs, sizes *C.uint64_t, capacity C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	return readerPairs(h, (*beton.Reader).AllocIndex, "ptrs", "sizes", ptrs, sizes, capacity, err)
}

// ffcv_reader_alloc_pages writes the reader's page maps (the distinct
// (sample, page) pairs of its allocations, sorted) into samples and pages,
// up to capacity entries (both may be NULL to ask for the count).
//
//export ffcv_reader_alloc_pages
func ffcv_reader_alloc_pages(h C.int64_t, samples, pages *C.uint64_t, capacity C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	return readerPairs(h, (*beton.Reader).AllocPages, "samples", "pages", samples, pages, capacity, err)
}

// readerPairs copies the two columns get gives for reader h into the
// caller's arrays a and b (named na and nb), of capacity entries each, and
// returns the count; with both NULL it only counts.
func readerPairs(h C.int64_t, get func(*beton.Reader) ([]uint64, []uint64, error), na, nb string,
	a, b *C.uint64_t, capacity C.uint64_t, err **C.char) C.int64_t {
	r, done, e := acquireReader(int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	x, y, e := get(r)
	if e != nil {
		return fail(err, fmt.Errorf("%s: %w", r.Path, e))
	}
	if a != nil || b != nil {
		da, e1 := cArray((*uint64)(unsafe.Pointer(a)), uint64(capacity), na)
		db, e2 := cArray((*uint64)(unsafe.Pointer(b)), uint64(capacity), nb)
		if e1 != nil || e2 != nil {
			return fail(err, fmt.Errorf("%w: %s and %s need room for %d entries", errArgument, na, nb, capacity))
		}
		copy(da, x)
		copy(db, y)
	}
	return C.int64_t(len(x))
}
