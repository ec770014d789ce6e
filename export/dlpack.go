package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#define FFCV_GO_TYPES_ONLY
#include <stdlib.h>
#include <unistd.h>
#include "ffcv_go.h"

extern void ffcvGoRelease(uint64_t key);

// The process that loaded the library: the Go runtime does not survive fork.
static pid_t ffcv_loaded_pid;
__attribute__((constructor)) static void ffcv_record_pid(void) { ffcv_loaded_pid = getpid(); }

// The deleter torch calls when the last view of a tensor dies: free the C
// structs, then give the batch reference back to Go. In a forked child (a
// tensor inherited from the parent) there is no Go runtime to call, and the
// batch is the parent's: only the C structs are freed.
static void ffcv_deleter(ffcv_DLManagedTensor *self) {
	uint64_t key = (uint64_t)(uintptr_t)self->manager_ctx;
	free(self->dl_tensor.shape);
	free(self);
	if (getpid() == ffcv_loaded_pid) ffcvGoRelease(key);
}

static void ffcv_delete_tensor(ffcv_DLManagedTensor *t) { t->deleter(t); }

static ffcv_DLManagedTensor *ffcv_new_tensor(void *data, int32_t ndim, uint8_t code, uint8_t bits, uint64_t key) {
	static char empty;
	ffcv_DLManagedTensor *t = calloc(1, sizeof(ffcv_DLManagedTensor));
	if (t == NULL) return NULL;
	t->dl_tensor.shape = calloc(ndim > 0 ? ndim : 1, sizeof(int64_t));
	if (t->dl_tensor.shape == NULL) { free(t); return NULL; }
	t->dl_tensor.data = data ? data : (void *)&empty;
	t->dl_tensor.device.device_type = 1; // kDLCPU
	t->dl_tensor.ndim = ndim;
	t->dl_tensor.dtype.code = code;
	t->dl_tensor.dtype.bits = bits;
	t->dl_tensor.dtype.lanes = 1;
	t->manager_ctx = (void *)(uintptr_t)key;
	t->deleter = ffcv_deleter;
	return t;
}
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/loader"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// tensorRefs maps a tensor's manager_ctx key to the batch whose memory it views.
var tensorRefs = struct {
	sync.Mutex
	m    map[uint64]*loader.Batch
	next uint64
}{m: map[uint64]*loader.Batch{}}

func addTensorRef(b *loader.Batch) uint64 {
	tensorRefs.Lock()
	defer tensorRefs.Unlock()
	tensorRefs.next++
	tensorRefs.m[tensorRefs.next] = b
	return tensorRefs.next
}

func releaseTensorRef(key uint64) {
	tensorRefs.Lock()
	b, ok := tensorRefs.m[key]
	delete(tensorRefs.m, key)
	tensorRefs.Unlock()
	if ok {
		b.Release()
	}
}

// dlType maps a numpy type string to DLPack's (code, bits) and the extra
// trailing dimension opaque types need.
func dlType(dtype string) (code, bits uint8, extra int, err error) {
	s := pipeline.Spec{DType: dtype}
	size := s.ItemSize()
	switch dtype[1] {
	case 'i':
		return 0, uint8(8 * size), 0, nil
	case 'u':
		return 1, uint8(8 * size), 0, nil
	case 'f':
		return 2, uint8(8 * size), 0, nil
	case 'c':
		return 5, uint8(8 * size), 0, nil
	case 'b', '?':
		return 6, 8, 0, nil
	case 'V', 'S':
		return 1, 8, size, nil
	}
	return 0, 0, 0, fmt.Errorf("dtype %q has no DLPack equivalent", dtype)
}

// tensorAllocFails, when set (by tests), makes the header allocation of
// tensor k fail as if C were out of memory.
var tensorAllocFails func(k int) bool

// exportBatch turns the outputs of b into DLManagedTensors written to out,
// each holding one reference to the batch; the iterator's own hold is
// released. On failure (even a panic) every tensor already made is deleted
// and out is cleared, so nothing is owed and nothing leaks.
func exportBatch(b *loader.Batch, specs []pipeline.Spec, out []*C.ffcv_DLManagedTensor) (err error) {
	defer b.Release() // the iterator's own hold
	made := 0
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: exporting batch %d: %v", b.Index, r)
		}
		if err != nil {
			for k := 0; k < made; k++ {
				C.ffcv_delete_tensor(out[k])
				out[k] = nil
			}
		}
	}()
	for k, s := range specs {
		code, bits, extra, err := dlType(s.DType)
		if err != nil {
			return fmt.Errorf("output %d: %w", k, err)
		}
		shape := append([]int{b.N}, s.Shape...)
		if extra > 0 {
			shape = append(shape, extra)
		}
		var data unsafe.Pointer
		if len(b.Bufs[k]) > 0 {
			data = unsafe.Pointer(unsafe.SliceData(b.Bufs[k]))
		}
		b.Share(1)
		key := addTensorRef(b)
		var t *C.ffcv_DLManagedTensor
		if tensorAllocFails == nil || !tensorAllocFails(k) {
			t = C.ffcv_new_tensor(data, C.int32_t(len(shape)), C.uint8_t(code), C.uint8_t(bits), C.uint64_t(key))
		}
		if t == nil {
			releaseTensorRef(key)
			return fmt.Errorf("batch %d, output %d: out of memory for a tensor header", b.Index, k)
		}
		out[k] = t
		made++
		dims := unsafe.Slice((*C.int64_t)(unsafe.Pointer(t.dl_tensor.shape)), len(shape))
		for i, d := range shape {
			dims[i] = C.int64_t(d)
		}
	}
	return nil
}
