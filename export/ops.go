package main

// Built-in operations, checked where the user writes them: Python's
// constructors hand each operation's spec to ffcv_op_check, and read the
// names of the policies' operations from ffcv_augment_ops, so that the
// arguments and the names live in the core only.

/*
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/policy"
)

// argError is an operation's argument error as the core words it: an
// argument error whose message is the core's alone.
type argError struct{ error }

func (argError) Is(target error) bool { return target == errArgument }

// ffcv_op_check checks the arguments of one built-in operation spec
// ({"op": name, ...arguments}, as in a loader's pipelines) without a file:
// FFCV_ERR_ARGUMENT with a message naming the bad argument, or 0.
//
//export ffcv_op_check
func ffcv_op_check(spec *C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	s, e := goString(spec, "spec")
	if e != nil {
		return fail(err, e)
	}
	if e := pipeline.Check(json.RawMessage(s)); e != nil {
		return fail(err, argError{e})
	}
	return 0
}

// ffcv_op_out writes into *out the output ({"shape", "dtype"}) that the
// built-in transform spec makes of its input in_spec ({"shape", "dtype"}),
// as Build infers it, so that Python declares the shapes the core
// computes (a resampled length, a spectrogram's frames) without a second
// copy of their rules. FFCV_ERR_ARGUMENT names the bad argument or input.
//
//export ffcv_op_out
func ffcv_op_out(spec, inSpec *C.char, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	s, e := goString(spec, "spec")
	if e != nil {
		return fail(err, e)
	}
	i, e := goString(inSpec, "in_spec")
	if e != nil {
		return fail(err, e)
	}
	var in pipeline.Spec
	if e := json.Unmarshal([]byte(i), &in); e != nil || len(in.DType) < 3 {
		return fail(err, argError{fmt.Errorf("input spec %s: want {\"shape\": [...], \"dtype\": \"<f4\"}", i)})
	}
	op, e := pipeline.New(pipeline.Env{}, json.RawMessage(s))
	if e != nil {
		return fail(err, argError{e})
	}
	o, e := op.Out(in)
	if e != nil {
		return fail(err, argError{e})
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<f4" as it is
	_ = enc.Encode(o)
	if e := putString(out, strings.TrimSpace(b.String())); e != nil {
		return fail(err, e)
	}
	return 0
}

// ffcv_augment_ops writes the names of the policies' operations (what
// augment_op's "name" takes, torchvision's names) as a JSON list into
// *out, and returns their number.
//
//export ffcv_augment_ops
func ffcv_augment_ops(out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	names := policy.OpNames()
	b, _ := json.Marshal(names)
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return C.int64_t(len(names))
}
