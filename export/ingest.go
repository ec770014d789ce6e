package main

/*
#define FFCV_GO_TYPES_ONLY
#include <stdlib.h>
#include "ffcv_go.h"
*/
import "C"

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"time"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/ingest"
	"github.com/ffcv-go/ffcv-go/core/remote"
)

type takeSpec struct {
	Exts    []string `json:"exts"`
	JSONKey string   `json:"json_key"`
}

// fileNames names output file k: prefix, k zero-padded to width digits, suffix.
type fileNames struct {
	Prefix string `json:"prefix"`
	Width  int    `json:"width"`
	Suffix string `json:"suffix"`
}

type ingestSpec struct {
	Shards     []string    `json:"shards"`
	Sources    []string    `json:"sources"`
	Fields     []fieldSpec `json:"fields"`
	Take       []takeSpec  `json:"take"`
	Ignore     []string    `json:"ignore"`
	Output     fileNames   `json:"output"`
	Split      string      `json:"split"`
	Target     uint64      `json:"target"`
	Skip       bool        `json:"skip"`
	Tokenize   []int       `json:"tokenize"`
	TextBatch  int         `json:"text_batch"`
	PageSize   uint64      `json:"page_size"`
	NumWorkers int         `json:"num_workers"`
	Readers    int         `json:"readers"`
	Seed       uint64      `json:"seed"`
	// ffcv_ingest_columns: the dataset's format ("mds", "litdata"), its
	// directory and each field's column.
	Format  string   `json:"format"`
	Root    string   `json:"root"`
	Columns []string `json:"columns"`
}

// ingestJob is a running conversion; push is set for one whose samples the
// caller pushes.
type ingestJob struct {
	*ingest.Job
	push   *ingest.Push
	fields []field.Desc
	rows   []uint64 // rows pushed per source, for keys
}

func (j *ingestJob) stop()        { j.Stop() }
func (j *ingestJob) Close() error { j.Abort(); return nil }

func (s ingestSpec) options() (ingest.Options, error) {
	descs, encs, custom, err := buildFields(s.Fields, s.Seed)
	if err != nil {
		return ingest.Options{}, err
	}
	if len(custom) > 0 {
		return ingest.Options{}, fmt.Errorf("%w: custom fields cannot be ingested", errArgument)
	}
	o := ingest.Options{Fields: descs, Encoders: encs, PageSize: s.PageSize, Workers: s.NumWorkers, Readers: s.Readers,
		Target: s.Target, Skip: s.Skip, Tokenize: s.Tokenize, TextBatch: s.TextBatch}
	switch s.Split {
	case "", "one":
		o.Split = ingest.One
	case "shard":
		o.Split = ingest.PerSource
	case "size":
		o.Split = ingest.BySize
	default:
		return o, fmt.Errorf("%w: split %q must be 'one', 'shard' or 'size'", errArgument, s.Split)
	}
	out := s.Output
	if out.Width < 0 {
		if o.Split != ingest.One {
			return o, fmt.Errorf("%w: several output files need a numbered name", errArgument)
		}
		o.Name = func(int) string { return out.Prefix }
	} else {
		o.Name = func(k int) string { return fmt.Sprintf("%s%0*d%s", out.Prefix, out.Width, k, out.Suffix) }
	}
	return o, nil
}

//export ffcv_ingest_webdataset
func ffcv_ingest_webdataset(specJSON *C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	var spec ingestSpec
	if e := parseSpec(specJSON, &spec); e != nil {
		return fail(err, e)
	}
	o, e := spec.options()
	if e != nil {
		return fail(err, e)
	}
	ro, e := remote.OptionsFromEnv()
	if e != nil {
		return fail(err, e)
	}
	w := &ingest.WebDataset{Fields: o.Fields, Ignore: spec.Ignore, Remote: ro}
	for _, t := range spec.Take {
		w.Take = append(w.Take, ingest.Take{Exts: t.Exts, JSONKey: t.JSONKey})
	}
	if e := w.Check(); e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	j, e := ingest.Run(w.Sources(spec.Shards), o)
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	return C.int64_t(handles.add(&ingestJob{Job: j, fields: o.Fields}))
}

//export ffcv_ingest_columns
func ffcv_ingest_columns(specJSON *C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	var spec ingestSpec
	if e := parseSpec(specJSON, &spec); e != nil {
		return fail(err, e)
	}
	if len(spec.Shards) > 0 || len(spec.Take) > 0 || len(spec.Ignore) > 0 || len(spec.Sources) > 0 {
		return fail(err, fmt.Errorf("%w: a dataset of columns is read from \"root\", not shards or sources", errArgument))
	}
	o, e := spec.options()
	if e != nil {
		return fail(err, e)
	}
	ro, e := remote.OptionsFromEnv()
	if e != nil {
		return fail(err, e)
	}
	c := &ingest.Columns{Fields: o.Fields, Take: spec.Columns, Remote: ro}
	if e := c.Check(); e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	var sources []ingest.Source
	switch spec.Format {
	case "mds":
		sources, e = c.MDSSources(spec.Root)
	case "litdata":
		sources, e = c.LitdataSources(spec.Root)
	default:
		return fail(err, fmt.Errorf("%w: format %q must be 'mds' or 'litdata'", errArgument, spec.Format))
	}
	if e != nil {
		if !errors.Is(e, fs.ErrNotExist) {
			e = fmt.Errorf("%w: %v", errArgument, e) // an index that cannot be read
		}
		return fail(err, e)
	}
	j, e := ingest.Run(sources, o)
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	return C.int64_t(handles.add(&ingestJob{Job: j, fields: o.Fields}))
}

//export ffcv_ingest_arrow
func ffcv_ingest_arrow(specJSON *C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	var spec ingestSpec
	if e := parseSpec(specJSON, &spec); e != nil {
		return fail(err, e)
	}
	if len(spec.Shards) > 0 || len(spec.Take) > 0 || len(spec.Ignore) > 0 {
		return fail(err, fmt.Errorf("%w: pushed samples come from \"sources\", not webdataset shards", errArgument))
	}
	o, e := spec.options()
	if e != nil {
		return fail(err, e)
	}
	for _, d := range o.Fields {
		switch d.Type {
		case field.RGBImage, field.Text, field.Int, field.Float, field.JSON, field.Bytes:
		default:
			return fail(err, fmt.Errorf("%w: field %q: a %v cannot come from an Arrow column", errArgument, d.Name, d.Type))
		}
	}
	push := ingest.NewPush(spec.Sources)
	j, e := ingest.Run(push.Sources(), o)
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	return C.int64_t(handles.add(&ingestJob{Job: j, push: push, fields: o.Fields, rows: make([]uint64, len(spec.Sources))}))
}

// acquirePush is the job of handle h (release it with done, even on error)
// when it takes pushed samples and source is one of its sources.
func acquirePush(h, source C.int64_t) (j *ingestJob, k int, done func(), err error) {
	j, done, err = acquire[*ingestJob](int64(h))
	if err != nil {
		return nil, 0, done, err
	}
	if j.push == nil {
		return nil, 0, done, fmt.Errorf("%w: this job reads webdataset shards itself", errArgument)
	}
	k = int(source)
	if k < 0 || k >= len(j.rows) {
		return nil, 0, done, fmt.Errorf("%w: source %d of %d", errArgument, k, len(j.rows))
	}
	return j, k, done, nil
}

//export ffcv_ingest_push
func ffcv_ingest_push(h, source C.int64_t, rows C.uint64_t, columns *C.ffcv_column, nColumns C.int32_t, keys *C.ffcv_column, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	j, k, done, e := acquirePush(h, source)
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if int(nColumns) != len(j.fields) {
		return fail(err, fmt.Errorf("%w: %d columns for %d fields", errArgument, nColumns, len(j.fields)))
	}
	if uint64(rows) > maxElems {
		return fail(err, fmt.Errorf("%w: %d rows", errArgument, rows))
	}
	cols, e := cArray(columns, uint64(nColumns), "columns")
	if e != nil {
		return fail(err, e)
	}
	items, e := arrowItems(j.fields, cols, keys, int(rows), j.rows[k])
	if e != nil {
		return fail(err, e)
	}
	j.rows[k] += uint64(rows)
	if e := j.push.Put(k, items); e != nil {
		if je := j.Err(); je != nil {
			e = je
		}
		return fail(err, e)
	}
	return 0
}

//export ffcv_ingest_end
func ffcv_ingest_end(h, source C.int64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	j, k, done, e := acquirePush(h, source)
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if e := j.push.End(k); e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	return 0
}

//export ffcv_ingest_texts
func ffcv_ingest_texts(h, timeoutMS C.int64_t, batch *C.uint64_t, data *unsafe.Pointer, offsets **C.uint64_t, n *C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	j, done, e := acquire[*ingestJob](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if batch == nil || data == nil || offsets == nil || n == nil {
		return fail(err, fmt.Errorf("outputs: %w", errNil))
	}
	b, ok, finished, e := j.Texts(time.Duration(max(int64(timeoutMS), 0)) * time.Millisecond)
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	if finished {
		return 2
	}
	if !ok {
		return 0
	}
	total := 0
	for _, t := range b.Texts {
		total += len(t)
	}
	buf := C.malloc(C.size_t(max(total, 1)))
	offs := (*C.uint64_t)(C.malloc(C.size_t(8 * (len(b.Texts) + 1))))
	if buf == nil || offs == nil {
		C.free(buf)
		C.free(unsafe.Pointer(offs))
		return fail(err, fmt.Errorf("out of memory for %d bytes of texts", total))
	}
	dst := unsafe.Slice((*byte)(buf), max(total, 1))
	os := unsafe.Slice(offs, len(b.Texts)+1)
	at := 0
	for i, t := range b.Texts {
		os[i] = C.uint64_t(at)
		at += copy(dst[at:], t)
	}
	os[len(b.Texts)] = C.uint64_t(at)
	*batch, *data, *offsets, *n = C.uint64_t(b.ID), buf, offs, C.uint64_t(len(b.Texts))
	return 1
}

//export ffcv_ingest_tokens
func ffcv_ingest_tokens(h C.int64_t, batch C.uint64_t, offsets *C.uint64_t, n C.uint64_t, tokens *C.uint32_t, nTokens C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	j, done, e := acquire[*ingestJob](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	offs, e := cArray((*uint64)(unsafe.Pointer(offsets)), uint64(n)+1, "offsets")
	if e != nil {
		return fail(err, e)
	}
	ids, e := cArray((*uint32)(unsafe.Pointer(tokens)), uint64(nTokens), "tokens")
	if e != nil {
		return fail(err, e)
	}
	lists := make([][]uint32, n)
	for i := range lists {
		a, b := offs[i], offs[i+1]
		if a > b || b > uint64(len(ids)) {
			return fail(err, fmt.Errorf("%w: text %d's tokens [%d, %d) outside the %d given", errArgument, i, a, b, len(ids)))
		}
		lists[i] = append([]uint32(nil), ids[a:b]...)
	}
	if e := j.PutTokens(uint64(batch), lists); e != nil {
		if je := j.Err(); je != nil {
			return fail(err, je) // the job failed meanwhile: that is the error
		}
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	return 0
}

//export ffcv_ingest_wait
func ffcv_ingest_wait(h, timeoutMS C.int64_t, progress *C.int64_t, report **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	j, done, e := acquire[*ingestJob](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	t := time.NewTimer(time.Duration(max(int64(timeoutMS), 0)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-j.Done():
	case <-t.C:
	}
	if progress != nil {
		*progress = C.int64_t(j.Progress())
	}
	select {
	case <-j.Done():
	default:
		return 0
	}
	rep, e := j.Wait()
	if e != nil {
		return fail(err, e)
	}
	b, _ := json.Marshal(rep)
	if e := putString(report, string(b)); e != nil {
		return fail(err, e)
	}
	return 1
}

// arrowItems makes the samples of rows rows of Arrow columns, one per
// field; first is the number of rows the source had before (for keys).
func arrowItems(fields []field.Desc, cols []C.ffcv_column, keys *C.ffcv_column, rows int, first uint64) ([]*ingest.Item, error) {
	items := make([]*ingest.Item, rows)
	for r := range items {
		items[r] = &ingest.Item{Key: fmt.Sprintf("row %d", first+uint64(r)), Values: make([]field.Value, len(fields))}
	}
	if keys != nil {
		kc := arrowColumn{c: keys}
		for r := range items {
			if b, ok, err := kc.one(r); err != nil {
				return nil, fmt.Errorf("keys: %w", err)
			} else if ok {
				items[r].Key = string(b)
			}
		}
	}
	for f, d := range fields {
		c := arrowColumn{c: &cols[f]}
		if err := c.fill(d, items, f); err != nil {
			return nil, fmt.Errorf("%w: field %q: %v", errArgument, d.Name, err)
		}
	}
	return items, nil
}

// arrowColumn reads an ffcv_column.
type arrowColumn struct{ c *C.ffcv_column }

func bit(bitmap *C.uint8_t, i int64) bool {
	if bitmap == nil {
		return true
	}
	b := *(*byte)(unsafe.Add(unsafe.Pointer(bitmap), i/8))
	return b&(1<<(i%8)) != 0
}

// offsetAt is element i of an int32 (width 32) or int64 offsets buffer.
func offsetAt(p unsafe.Pointer, wide bool, i int64) int64 {
	if wide {
		return int64(binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(p, 8*i)), 8)))
	}
	return int64(int32(binary.LittleEndian.Uint32(unsafe.Slice((*byte)(unsafe.Add(p, 4*i)), 4))))
}

// span is the range of value elements of row r, and whether r is valid.
func (a arrowColumn) span(r int) (lo, hi int64, ok bool) {
	c := a.c
	i := int64(c.offset) + int64(r)
	if !bit(c.validity, i) {
		return 0, 0, false
	}
	if c.list == 0 {
		return i, i + 1, true
	}
	if c.list_offsets == nil {
		panic("list column without list offsets")
	}
	wide := c.list == 64
	lo, hi = offsetAt(c.list_offsets, wide, i), offsetAt(c.list_offsets, wide, i+1)
	return lo + int64(c.values_offset), hi + int64(c.values_offset), true
}

// binaryAt is value element i of a binary column, and whether it is valid.
func (a arrowColumn) binaryAt(i int64) ([]byte, bool, error) {
	c := a.c
	if c.list != 0 && !bit(c.values_validity, i) {
		return nil, false, nil
	}
	if c.offsets == nil || (c.data == nil && c.data_len > 0) {
		return nil, false, fmt.Errorf("a binary column without offsets or data")
	}
	wide := c.kind == C.FFCV_COLUMN_LARGE_BINARY
	lo, hi := offsetAt(c.offsets, wide, i), offsetAt(c.offsets, wide, i+1)
	if lo < 0 || hi < lo || uint64(hi) > uint64(c.data_len) {
		return nil, false, fmt.Errorf("value %d spans bytes [%d, %d) of %d", i, lo, hi, c.data_len)
	}
	if hi == lo {
		return []byte{}, true, nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(c.data, lo)), hi-lo), true, nil
}

// one is row r's single binary value (copied), and whether it is valid.
func (a arrowColumn) one(r int) ([]byte, bool, error) {
	if a.c.kind != C.FFCV_COLUMN_BINARY && a.c.kind != C.FFCV_COLUMN_LARGE_BINARY || a.c.list != 0 {
		return nil, false, fmt.Errorf("the column holds no single bytes or string per row")
	}
	lo, _, ok := a.span(r)
	if !ok {
		return nil, false, nil
	}
	b, ok, err := a.binaryAt(lo)
	return append([]byte(nil), b...), ok, err
}

func (a arrowColumn) fixed(r int, size int64) ([]byte, bool, error) {
	lo, _, ok := a.span(r)
	if !ok {
		return nil, false, nil
	}
	if a.c.data == nil || uint64((lo+1)*size) > uint64(a.c.data_len) {
		return nil, false, fmt.Errorf("value %d past the %d bytes of data", lo, a.c.data_len)
	}
	return unsafe.Slice((*byte)(unsafe.Add(a.c.data, lo*size)), size), true, nil
}

// fill sets field f of every item from the column; a missing value is a
// problem that drops its sample.
func (a arrowColumn) fill(d field.Desc, items []*ingest.Item, f int) error {
	c := a.c
	binaryKind := c.kind == C.FFCV_COLUMN_BINARY || c.kind == C.FFCV_COLUMN_LARGE_BINARY
	missing := func(it *ingest.Item, what string) {
		it.Problems = append(it.Problems, ingest.Problem{Reason: fmt.Sprintf("field %q: %s", d.Name, what), Dropped: true})
	}
	switch d.Type {
	case field.Text:
		if !binaryKind {
			return fmt.Errorf("a TextField takes a string column or a list of strings")
		}
		// Tokens come for the captions that are there: every non-null value
		// of every non-null row, in order.
		var toks []uint64
		var ids []uint32
		if c.token_offsets != nil {
			n := uint64(0)
			for r := range items {
				lo, hi, ok := a.span(r)
				for i := lo; ok && i < hi; i++ {
					if c.list == 0 || bit(c.values_validity, i) {
						n++
					}
				}
			}
			var err error
			if toks, err = cArray((*uint64)(unsafe.Pointer(c.token_offsets)), n+1, "token_offsets"); err != nil {
				return err
			}
			if ids, err = cArray((*uint32)(unsafe.Pointer(c.tokens)), uint64(c.n_tokens), "tokens"); err != nil {
				return err
			}
		}
		caption := 0
		for r, it := range items {
			lo, hi, ok := a.span(r)
			if !ok {
				missing(it, "no caption (null)")
				continue
			}
			v := field.Value{}
			null := false
			for i := lo; i < hi; i++ {
				b, ok, err := a.binaryAt(i)
				if err != nil {
					return err
				}
				if !ok {
					null = true
					continue
				}
				v.Texts = append(v.Texts, append([]byte(nil), b...))
				if toks != nil {
					t0, t1 := toks[caption], toks[caption+1]
					if t0 > t1 || t1 > uint64(len(ids)) {
						return fmt.Errorf("caption %d's tokens [%d, %d) outside the %d given", caption, t0, t1, len(ids))
					}
					v.Tokens = append(v.Tokens, append([]uint32(nil), ids[t0:t1]...))
				}
				caption++
			}
			switch {
			case null:
				missing(it, "a null caption in the list")
			case len(v.Texts) == 0:
				missing(it, "an empty list of captions")
			}
			it.Values[f] = v
		}
		return nil
	case field.RGBImage, field.JSON, field.Bytes:
		if !binaryKind || c.list != 0 {
			return fmt.Errorf("a %v takes a binary or string column", d.Type)
		}
		for r, it := range items {
			b, ok, err := a.one(r)
			if err != nil {
				return err
			}
			if !ok {
				missing(it, "null")
				continue
			}
			switch d.Type {
			case field.RGBImage:
				it.Values[f] = field.Value{Data: b, Encoded: true}
			case field.JSON:
				if !json.Valid(b) {
					missing(it, "not valid JSON")
					continue
				}
				it.Values[f] = field.Value{Data: b}
			default:
				it.Values[f] = field.Value{Data: b}
			}
		}
		return nil
	case field.Int, field.Float:
		want := C.int32_t(C.FFCV_COLUMN_INT64)
		if d.Type == field.Float {
			want = C.FFCV_COLUMN_FLOAT64
		}
		if c.kind != want || c.list != 0 {
			return fmt.Errorf("a %v takes an int64 or float64 column (cast it)", d.Type)
		}
		for r, it := range items {
			b, ok, err := a.fixed(r, 8)
			if err != nil {
				return err
			}
			if !ok {
				missing(it, "null")
				continue
			}
			x := binary.LittleEndian.Uint64(b)
			if d.Type == field.Int {
				it.Values[f] = field.Value{Int: int64(x)}
			} else {
				it.Values[f] = field.Value{Float: math.Float64frombits(x)}
			}
		}
		return nil
	}
	return fmt.Errorf("a %v cannot come from an Arrow column", d.Type)
}
