package main

/*
#define FFCV_GO_TYPES_ONLY
#include "ffcv_go.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/audioenc"
	"github.com/ffcv-go/ffcv-go/core/field"
)

// ffcv_audio_encode encodes one AudioField value as the writer stores it,
// so that Python's writer can refuse a bad file by its item (and skip it)
// before the sample reaches the Go writer; see include/ffcv_go.h.
//
//export ffcv_audio_encode
func ffcv_audio_encode(spec *C.char, value *C.ffcv_value, out *unsafe.Pointer, outLen *C.uint64_t, column *C.uint8_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	if value == nil || out == nil || outLen == nil || column == nil {
		return fail(err, fmt.Errorf("%w: NULL argument", errArgument))
	}
	var o audioenc.Options
	if e := parseSpec(spec, &o); e != nil {
		return fail(err, e)
	}
	if e := o.Check(); e != nil {
		return fail(err, fmt.Errorf("%w: AudioField: %v", errArgument, e))
	}
	c := value
	v := field.Value{Int: int64(c.i), Width: int(c.width), Channels: int(c.channels), Encoded: c.encoded == 1}
	data, e := cArray((*byte)(c.data), uint64(c.len), "data")
	if e != nil {
		return fail(err, e)
	}
	if c.encoded == 2 {
		v.Path = string(data)
	} else {
		v.Data = data // read during this call only
	}
	heap, m, e := audioenc.Encode(v, o)
	if e != nil {
		return fail(err, e)
	}
	*out = C.CBytes(heap)
	*outLen = C.uint64_t(len(heap))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(column)), field.AudioColumnSize), m.Column())
	return 0
}
