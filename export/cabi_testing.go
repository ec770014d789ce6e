package main

// Go-typed wrappers for export_test.go, which drives the exported functions
// directly (cgo is not allowed in test files). The linker drops them from the
// library: nothing there calls them.

/*
#define FFCV_GO_TYPES_ONLY
#include <stdlib.h>
#include "ffcv_go.h"

static void ffcv_test_delete(ffcv_DLManagedTensor *t) { t->deleter(t); }
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// cResult is what an export returned: its value and, if negative, its message.
type cResult struct {
	ret int64
	msg string
}

func (r cResult) err() error {
	if r.ret >= 0 {
		return nil
	}
	return fmt.Errorf("code %d: %s", r.ret, r.msg)
}

func cCall(f func(err **C.char) C.int64_t) cResult {
	var e *C.char
	ret := int64(f(&e))
	r := cResult{ret: ret}
	if e != nil {
		r.msg = C.GoString(e)
		C.free(unsafe.Pointer(e))
	}
	return r
}

func cStr(s string) (*C.char, func()) {
	p := C.CString(s)
	return p, func() { C.free(unsafe.Pointer(p)) }
}

// testDatasetOpen opens paths (a JSON list) as ffcv_dataset_open does;
// "null" passes a NULL pointer.
func testDatasetOpen(pathsJSON string) cResult {
	if pathsJSON == "null" {
		return cCall(func(e **C.char) C.int64_t { return ffcv_dataset_open(nil, nil, e) })
	}
	p, free := cStr(pathsJSON)
	defer free()
	return cCall(func(e **C.char) C.int64_t { return ffcv_dataset_open(p, nil, e) })
}

// testDatasetPaths expands paths (a JSON list) as ffcv_dataset_paths does.
func testDatasetPaths(pathsJSON string) (string, cResult) {
	p, free := cStr(pathsJSON)
	defer free()
	var out *C.char
	r := cCall(func(e **C.char) C.int64_t { return ffcv_dataset_paths(p, &out, e) })
	if out == nil {
		return "", r
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoString(out), r
}

func testWriterCreate(path, spec string) cResult {
	p, freeP := cStr(path)
	defer freeP()
	s, freeS := cStr(spec)
	defer freeS()
	return cCall(func(e **C.char) C.int64_t { return ffcv_writer_create(p, s, e) })
}

func testWriterAbort(h int64) cResult {
	return cCall(func(e **C.char) C.int64_t { return ffcv_writer_abort(C.int64_t(h), e) })
}

// testReaderPairs calls ffcv_reader_allocs (pages false) or
// ffcv_reader_alloc_pages with arrays of room entries (nil for room < 0).
func testReaderPairs(h int64, pages bool, room int) ([]uint64, []uint64, cResult) {
	fn := ffcv_reader_allocs
	if pages {
		fn = ffcv_reader_alloc_pages
	}
	var a, b []uint64
	var pa, pb *C.uint64_t
	if room >= 0 {
		a, b = make([]uint64, room+1), make([]uint64, room+1) // one spare: nothing is written past room
		a[room], b[room] = 7, 7
		pa, pb = (*C.uint64_t)(&a[0]), (*C.uint64_t)(&b[0])
	}
	r := cCall(func(e **C.char) C.int64_t { return fn(C.int64_t(h), pa, pb, C.uint64_t(max(room, 0)), e) })
	if room >= 0 && (a[room] != 7 || b[room] != 7) {
		panic("written past the capacity given")
	}
	if room > 0 {
		a, b = a[:room], b[:room]
	}
	return a, b, r
}

// testReaderRead reads field f of sample i and returns its column's length
// (the bytes themselves are valid only until the reader is closed).
func testReaderRead(h int64, i uint64, f int) (int, cResult) {
	var col, heap unsafe.Pointer
	var colLen, heapLen C.uint64_t
	r := cCall(func(e **C.char) C.int64_t {
		return ffcv_reader_read(C.int64_t(h), C.uint64_t(i), C.int32_t(f), &col, &colLen, &heap, &heapLen, e)
	})
	return int(colLen), r
}

func testReaderReadNil(h int64) cResult {
	return cCall(func(e **C.char) C.int64_t { return ffcv_reader_read(C.int64_t(h), 0, 0, nil, nil, nil, nil, e) })
}

func testClose(h int64) cResult {
	return cCall(func(e **C.char) C.int64_t { return ffcv_close(C.int64_t(h), e) })
}

func testJSON(fn func(C.int64_t, **C.char, **C.char) C.int64_t, h int64) (string, cResult) {
	var out *C.char
	r := cCall(func(e **C.char) C.int64_t { return fn(C.int64_t(h), &out, e) })
	if out == nil {
		return "", r
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoString(out), r
}

func testLoaderCreate(spec string) cResult {
	p, free := cStr(spec)
	defer free()
	return cCall(func(e **C.char) C.int64_t { return ffcv_loader_create(p, nil, 0, e) })
}

func testLoaderStart(h int64, epoch uint64) cResult {
	return cCall(func(e **C.char) C.int64_t { return ffcv_loader_start(C.int64_t(h), C.uint64_t(epoch), 0, nil, 0, 0, e) })
}

// testTensor is a DLManagedTensor handed out by ffcv_iter_next.
type testTensor struct{ t *C.ffcv_DLManagedTensor }

func (t testTensor) shape() []int64 {
	d := &t.t.dl_tensor
	s := unsafe.Slice((*int64)(unsafe.Pointer(d.shape)), int(d.ndim))
	return append([]int64(nil), s...)
}

func (t testTensor) bytes() []byte {
	d := &t.t.dl_tensor
	n := int64(d.dtype.bits / 8)
	for _, s := range t.shape() {
		n *= s
	}
	return unsafe.Slice((*byte)(d.data), n)
}

// free runs the tensor's deleter, as torch does.
func (t testTensor) free() { C.ffcv_test_delete(t.t) }

func testIterNext(h int64, room int) ([]testTensor, cResult) {
	buf := make([]*C.ffcv_DLManagedTensor, room)
	var p **C.ffcv_DLManagedTensor
	if room > 0 {
		p = &buf[0]
	}
	r := cCall(func(e **C.char) C.int64_t { return ffcv_iter_next(C.int64_t(h), p, C.int32_t(room), e) })
	var out []testTensor
	for k := 0; k < int(max(r.ret, 0)); k++ {
		out = append(out, testTensor{buf[k]})
	}
	for k := int(max(r.ret, 0)); k < room; k++ {
		if buf[k] != nil {
			panic(fmt.Sprintf("tensor %d written beyond the returned count", k))
		}
	}
	return out, r
}

func testRelease(key uint64) { ffcvGoRelease(C.uint64_t(key)) }

func testLive() int64 { return int64(ffcv_live_objects()) }

func testGoroutines() int64 { return int64(ffcv_goroutines()) }

func testABIVersion() int64 { return int64(ffcv_abi_version()) }

// testNormalizeTable fills a room-byte table as ffcv_normalize_table does
// ("null" passes a NULL spec).
func testNormalizeTable(spec string, room int) ([]byte, cResult) {
	out := make([]byte, room)
	var p unsafe.Pointer
	if room > 0 {
		p = C.malloc(C.size_t(room))
		defer C.free(p)
	}
	var s *C.char
	if spec != "null" {
		var free func()
		s, free = cStr(spec)
		defer free()
	}
	r := cCall(func(e **C.char) C.int64_t { return ffcv_normalize_table(s, p, C.uint64_t(room), e) })
	if room > 0 {
		copy(out, unsafe.Slice((*byte)(p), room))
	}
	return out, r
}

// testCrop runs ffcv_pad (pad set) or ffcv_resize_crop on the srcH×srcW
// RGB image src (nil passes NULL) into a dstH×dstW image, first all 0xff.
func testCrop(pad bool, src []byte, srcH, srcW, r0, r1, c0, c1, dstH, dstW int64) ([]byte, cResult) {
	var s unsafe.Pointer
	if src != nil {
		s = C.CBytes(src)
		defer C.free(s)
	}
	n := max(int(dstH*dstW*3), 1)
	d := C.malloc(C.size_t(n))
	defer C.free(d)
	out := unsafe.Slice((*byte)(d), n)
	for i := range out {
		out[i] = 0xff
	}
	r := cCall(func(e **C.char) C.int64_t {
		if pad {
			return ffcv_pad(s, C.int64_t(srcH), C.int64_t(srcW), C.int64_t(r0), C.int64_t(r1), C.int64_t(c0), C.int64_t(c1),
				d, C.int64_t(dstH), C.int64_t(dstW), e)
		}
		return ffcv_resize_crop(s, C.int64_t(srcH), C.int64_t(srcW), C.int64_t(r0), C.int64_t(r1), C.int64_t(c0), C.int64_t(c1),
			d, C.int64_t(dstH), C.int64_t(dstW), e)
	})
	return append([]byte(nil), out...), r
}

// testLoaderTrace calls ffcv_loader_trace with room for room spans (nil
// for room < 0) and returns the spans it wrote.
func testLoaderTrace(h int64, room int) ([]C.ffcv_trace_event, cResult) {
	var buf []C.ffcv_trace_event
	var p *C.ffcv_trace_event
	if room >= 0 {
		buf = make([]C.ffcv_trace_event, room+1) // one spare: nothing is written past room
		buf[room].arg = 77
		p = &buf[0]
	}
	r := cCall(func(e **C.char) C.int64_t { return ffcv_loader_trace(C.int64_t(h), p, C.uint64_t(max(room, 0)), e) })
	if room >= 0 && buf[room].arg != 77 {
		panic("written past the capacity given")
	}
	if room < 0 || r.ret < 0 {
		return nil, r
	}
	return buf[:r.ret], r
}

// traceSpan is a span's fields, in Go types.
func traceSpan(ev C.ffcv_trace_event) (start, dur int64, arg uint64, track, stage int32) {
	return int64(ev.start_ns), int64(ev.dur_ns), uint64(ev.arg), int32(ev.track), int32(ev.stage)
}

// testMixtureOpen opens a mixture as ffcv_mixture_open does: its handle
// and the JSON description of its sources.
func testMixtureOpen(spec string) (string, cResult) {
	p, free := cStr(spec)
	defer free()
	var out *C.char
	r := cCall(func(e **C.char) C.int64_t { return ffcv_mixture_open(p, &out, e) })
	if out == nil {
		return "", r
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoString(out), r
}

// testColumn is an ffcv_column's content as Go slices; offsets are written
// with the width the kinds ask for.
type testColumn struct {
	kind, list     int32
	offset         int64
	validity       []byte
	listOffsets    []int64
	valuesOffset   int64
	valuesValidity []byte
	offsets        []int64
	data           []byte
	int64s         []int64
	tokenOffsets   []uint64
	tokens         []uint32
}

// cBytes copies b into C memory (nil for none); free releases everything.
func cBytes(b []byte, free *[]unsafe.Pointer) unsafe.Pointer {
	if b == nil {
		return nil
	}
	p := C.malloc(C.size_t(max(len(b), 1)))
	copy(unsafe.Slice((*byte)(p), len(b)), b)
	*free = append(*free, p)
	return p
}

func le(xs []int64, wide bool) []byte {
	if xs == nil {
		return nil
	}
	var b []byte
	for _, x := range xs {
		if wide {
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		} else {
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		}
	}
	return b
}

func (tc testColumn) c(free *[]unsafe.Pointer) C.ffcv_column {
	c := C.ffcv_column{kind: C.int32_t(tc.kind), list: C.int32_t(tc.list), offset: C.int64_t(tc.offset),
		values_offset: C.int64_t(tc.valuesOffset), data_len: C.uint64_t(len(tc.data))}
	c.validity = (*C.uint8_t)(cBytes(tc.validity, free))
	c.values_validity = (*C.uint8_t)(cBytes(tc.valuesValidity, free))
	c.list_offsets = cBytes(le(tc.listOffsets, tc.list == 64), free)
	c.offsets = cBytes(le(tc.offsets, tc.kind == C.FFCV_COLUMN_LARGE_BINARY), free)
	data := tc.data
	if tc.int64s != nil {
		data = le(tc.int64s, true)
		c.data_len = C.uint64_t(len(data))
	}
	c.data = cBytes(data, free)
	if tc.tokenOffsets != nil {
		var tb, ob []byte
		for _, x := range tc.tokenOffsets {
			ob = binary.LittleEndian.AppendUint64(ob, x)
		}
		for _, x := range tc.tokens {
			tb = binary.LittleEndian.AppendUint32(tb, x)
		}
		c.token_offsets = (*C.uint64_t)(cBytes(ob, free))
		c.tokens = (*C.uint32_t)(cBytes(tb, free))
		c.n_tokens = C.uint64_t(len(tc.tokens))
	}
	return c
}

func testIngest(spec string, webdataset bool) cResult {
	s, free := cStr(spec)
	defer free()
	if webdataset {
		return cCall(func(e **C.char) C.int64_t { return ffcv_ingest_webdataset(s, e) })
	}
	return cCall(func(e **C.char) C.int64_t { return ffcv_ingest_arrow(s, e) })
}

func testIngestColumns(spec string) cResult {
	s, free := cStr(spec)
	defer free()
	return cCall(func(e **C.char) C.int64_t { return ffcv_ingest_columns(s, e) })
}

func testPush(h int64, source int64, rows uint64, cols []testColumn, keys *testColumn) cResult {
	var free []unsafe.Pointer
	defer func() {
		for _, p := range free {
			C.free(p)
		}
	}()
	cc := (*C.ffcv_column)(C.malloc(C.size_t(max(len(cols), 1)) * C.size_t(unsafe.Sizeof(C.ffcv_column{}))))
	free = append(free, unsafe.Pointer(cc))
	cs := unsafe.Slice(cc, max(len(cols), 1))
	for i, tc := range cols {
		cs[i] = tc.c(&free)
	}
	var kc *C.ffcv_column
	if keys != nil {
		kc = (*C.ffcv_column)(C.malloc(C.size_t(unsafe.Sizeof(C.ffcv_column{}))))
		free = append(free, unsafe.Pointer(kc))
		*kc = keys.c(&free)
	}
	return cCall(func(e **C.char) C.int64_t {
		return ffcv_ingest_push(C.int64_t(h), C.int64_t(source), C.uint64_t(rows), cc, C.int32_t(len(cols)), kc, e)
	})
}

func testIngestEnd(h, source int64) cResult {
	return cCall(func(e **C.char) C.int64_t { return ffcv_ingest_end(C.int64_t(h), C.int64_t(source), e) })
}

// testTexts takes the next batch of texts: (id, texts, result: 1, 0 or 2).
func testTexts(h int64, timeoutMS int64) (uint64, []string, cResult) {
	var batch, n C.uint64_t
	var data unsafe.Pointer
	var offs *C.uint64_t
	r := cCall(func(e **C.char) C.int64_t {
		return ffcv_ingest_texts(C.int64_t(h), C.int64_t(timeoutMS), &batch, &data, &offs, &n, e)
	})
	if r.ret != 1 {
		return 0, nil, r
	}
	defer C.free(data)
	defer C.free(unsafe.Pointer(offs))
	os := unsafe.Slice(offs, int(n)+1)
	var texts []string
	for i := 0; i < int(n); i++ {
		texts = append(texts, C.GoStringN((*C.char)(unsafe.Add(data, int(os[i]))), C.int(os[i+1]-os[i])))
	}
	return uint64(batch), texts, r
}

func testTokens(h int64, batch uint64, lists [][]uint32) cResult {
	offs := []uint64{0}
	var ids []uint32
	for _, l := range lists {
		ids = append(ids, l...)
		offs = append(offs, uint64(len(ids)))
	}
	ids = append(ids, 0) // never a nil pointer
	return cCall(func(e **C.char) C.int64_t {
		return ffcv_ingest_tokens(C.int64_t(h), C.uint64_t(batch), (*C.uint64_t)(unsafe.Pointer(&offs[0])), C.uint64_t(len(lists)),
			(*C.uint32_t)(unsafe.Pointer(&ids[0])), C.uint64_t(len(ids)-1), e)
	})
}

// testIngestWait waits for the job: its report (JSON) once it has ended.
func testIngestWait(h int64, timeoutMS int64) (string, int64, cResult) {
	var progress C.int64_t
	var out *C.char
	r := cCall(func(e **C.char) C.int64_t {
		return ffcv_ingest_wait(C.int64_t(h), C.int64_t(timeoutMS), &progress, &out, e)
	})
	if out == nil {
		return "", int64(progress), r
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoString(out), int64(progress), r
}

// testOpCheck calls ffcv_op_check ("null" passes a NULL spec).
func testOpCheck(spec string) cResult {
	var s *C.char
	if spec != "null" {
		var free func()
		s, free = cStr(spec)
		defer free()
	}
	return cCall(func(e **C.char) C.int64_t { return ffcv_op_check(s, e) })
}

// testOpOut calls ffcv_op_out ("null" passes a NULL spec).
func testOpOut(spec, in string) (string, cResult) {
	var s *C.char
	if spec != "null" {
		var free func()
		s, free = cStr(spec)
		defer free()
	}
	i, free := cStr(in)
	defer free()
	var out *C.char
	r := cCall(func(e **C.char) C.int64_t { return ffcv_op_out(s, i, &out, e) })
	defer C.free(unsafe.Pointer(out))
	return C.GoString(out), r
}

// testAugmentOps calls ffcv_augment_ops.
func testAugmentOps() (string, cResult) {
	var out *C.char
	r := cCall(func(e **C.char) C.int64_t { return ffcv_augment_ops(&out, e) })
	defer C.free(unsafe.Pointer(out))
	return C.GoString(out), r
}
