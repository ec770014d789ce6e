package main

/*
#define FFCV_GO_TYPES_ONLY
#include <stdlib.h>
#include "ffcv_go.h"
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
		case field.RGBImage, field.Audio, field.Text, field.Int, field.Float, field.JSON, field.Bytes:
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
	gcols := make([]ingest.ArrowColumn, len(cols))
	for f := range cols {
		var err error
		if gcols[f], err = goColumn(&cols[f], rows); err != nil {
			return nil, fmt.Errorf("%w: field %q: %v", errArgument, fields[f].Name, err)
		}
	}
	var gkeys *ingest.ArrowColumn
	if keys != nil {
		k, err := goColumn(keys, rows)
		if err != nil {
			return nil, fmt.Errorf("%w: keys: %v", errArgument, err)
		}
		gkeys = &k
	}
	items, err := ingest.ArrowItems(fields, gcols, gkeys, rows, first)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errArgument, err)
	}
	return items, nil
}

// goColumn is c's buffers as slices of the lengths its first rows rows
// take (Arrow's layout gives them; only the data's is passed).
func goColumn(c *C.ffcv_column, rows int) (ingest.ArrowColumn, error) {
	a := ingest.ArrowColumn{Kind: int(c.kind), List: int(c.list), Offset: int64(c.offset), ValuesOffset: int64(c.values_offset)}
	if a.Offset < 0 || a.Offset > maxElems || a.ValuesOffset < 0 || a.ValuesOffset > maxElems {
		return a, fmt.Errorf("offsets %d and %d", a.Offset, a.ValuesOffset)
	}
	end := uint64(a.Offset) + uint64(rows)
	var err error
	if a.Validity, err = cBuffer(unsafe.Pointer(c.validity), (end+7)/8, "validity"); err != nil {
		return a, err
	}
	if a.List != 0 {
		if a.ListOffsets, err = cBuffer(unsafe.Pointer(c.list_offsets), (end+1)*uint64(a.List/8), "list_offsets"); err != nil {
			return a, err
		}
	}
	n, err := a.Elements(rows)
	if err != nil {
		return a, err
	}
	if n > maxElems {
		return a, fmt.Errorf("%d value elements", n)
	}
	if a.List != 0 {
		if a.ValuesValidity, err = cBuffer(unsafe.Pointer(c.values_validity), (uint64(n)+7)/8, "values_validity"); err != nil {
			return a, err
		}
	}
	switch a.Kind {
	case ingest.ArrowBinary, ingest.ArrowLargeBinary:
		w := uint64(4)
		if a.Kind == ingest.ArrowLargeBinary {
			w = 8
		}
		if a.Offsets, err = cBuffer(unsafe.Pointer(c.offsets), (uint64(n)+1)*w, "offsets"); err != nil {
			return a, err
		}
	}
	if a.Data, err = cBuffer(unsafe.Pointer(c.data), uint64(c.data_len), "data"); err != nil {
		return a, err
	}
	if c.token_offsets != nil {
		k, err := a.Captions(rows)
		if err != nil {
			return a, err
		}
		if a.TokenOffsets, err = cArray((*uint64)(unsafe.Pointer(c.token_offsets)), uint64(k)+1, "token_offsets"); err != nil {
			return a, err
		}
		if a.Tokens, err = cArray((*uint32)(unsafe.Pointer(c.tokens)), uint64(c.n_tokens), "tokens"); err != nil {
			return a, err
		}
	}
	return a, nil
}

// cBuffer is n bytes at p; nil for a nil p (an absent buffer).
func cBuffer(p unsafe.Pointer, n uint64, what string) ([]byte, error) {
	if p == nil || n == 0 {
		return nil, nil
	}
	return cArray((*byte)(p), n, what)
}
