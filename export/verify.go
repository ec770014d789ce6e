package main

/*
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/verify"
)

//export ffcv_verify
func ffcv_verify(h C.int64_t, workers C.int32_t, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	r, done, e := acquireReader(int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if _, e := r.Data(); e != nil {
		return fail(err, fmt.Errorf("verify reads through the memory map: %w", e))
	}
	problems := verify.File(r, int(workers), nil)
	if problems == nil {
		problems = []verify.Problem{}
	}
	b, _ := json.Marshal(problems)
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return C.int64_t(len(problems))
}
