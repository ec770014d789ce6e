// Command export builds libffcv_go, the C ABI of the Go core
// (go build -buildmode=c-shared). include/ffcv_go.h documents every function.
// Functions here only translate between C and the core packages: they check
// handles and pointers, recover panics and turn errors into messages.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include
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
	"runtime"
	"runtime/debug"
	"strings"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/cache"
	"github.com/ffcv-go/ffcv-go/core/dataset"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imagefolder"
	"github.com/ffcv-go/ffcv-go/core/ingest"
	"github.com/ffcv-go/ffcv-go/core/loader"
	"github.com/ffcv-go/ffcv-go/core/mixture"
	"github.com/ffcv-go/ffcv-go/core/remote"
)

func main() {}

const version = "0.1.0"

var cVersion = C.CString(version)

//export ffcv_version
func ffcv_version() *C.char { return cVersion }

//export ffcv_free
func ffcv_free(p unsafe.Pointer) { C.free(p) }

//export ffcv_abi_version
func ffcv_abi_version() C.int64_t { return C.FFCV_GO_ABI_VERSION }

// Error classes, returned as negative codes so callers can raise the right
// exception type. The header defines them; python/ffcv_go/_lib.py mirrors
// them and its tests check both against it.
const (
	codeInternal = C.FFCV_ERR_INTERNAL
	codeArgument = C.FFCV_ERR_ARGUMENT
	codeFormat   = C.FFCV_ERR_FORMAT
	codeIO       = C.FFCV_ERR_IO
	codeNotFound = C.FFCV_ERR_NOT_FOUND
	codeData     = C.FFCV_ERR_DATA
)

// errArgument marks errors about the caller's arguments.
var errArgument = errors.New("invalid argument")

// fail reports e through the caller's err pointer and returns its class code.
func fail(err **C.char, e error) C.int64_t {
	if err != nil {
		*err = C.CString(e.Error())
	}
	var pe *fs.PathError
	var re *remote.Error
	switch {
	case errors.Is(e, fs.ErrNotExist):
		return codeNotFound
	case errors.As(e, &re): // a request to S3 or an HTTP server failed for good
		return codeIO
	case errors.Is(e, beton.ErrFormat):
		return codeFormat
	case errors.Is(e, errArgument), errors.Is(e, errNil), errors.Is(e, field.ErrNoHandler),
		errors.Is(e, beton.ErrShards), errors.Is(e, beton.ErrNotMapped), errors.Is(e, dataset.ErrArgument),
		errors.Is(e, remote.ErrBadURL), errors.Is(e, remote.ErrBadEnv), errors.Is(e, mixture.ErrMixture),
		errors.Is(e, imagefolder.ErrLayout):
		return codeArgument
	case errors.As(e, &pe):
		return codeIO
	case errors.Is(e, field.ErrData), errors.Is(e, ingest.ErrBad), errors.Is(e, ingest.ErrShard):
		return codeData
	}
	return codeInternal
}

// faultsPanic makes a fault on mapped memory (a file truncated while open) a
// panic that guard recovers, for the rest of the calling export:
// defer faultsPanic()() after guard.
func faultsPanic() func() {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}

// guard turns a panic into an error return; defer it first in every export.
func guard(err **C.char, ret *C.int64_t) {
	if r := recover(); r != nil {
		if _, fault := r.(interface{ Addr() uintptr }); fault {
			*ret = fail(err, fmt.Errorf("%w: memory fault reading a mapped file (truncated or replaced while in use?): %v", beton.ErrFormat, r))
			return
		}
		*ret = fail(err, fmt.Errorf("internal error: %v", r))
	}
}

var errNil = errors.New("null pointer argument")

// goString converts a required C string argument.
func goString(s *C.char, what string) (string, error) {
	if s == nil {
		return "", fmt.Errorf("%s: %w", what, errNil)
	}
	return C.GoString(s), nil
}

// maxElems bounds the element counts callers pass with C arrays: larger
// counts cannot describe real memory and would fault when read.
const maxElems = 1 << 34

// cArray views n elements at p, rejecting null pointers and absurd counts.
func cArray[T any](p *T, n uint64, what string) ([]T, error) {
	if n == 0 {
		return nil, nil
	}
	if p == nil {
		return nil, fmt.Errorf("%s: %w", what, errNil)
	}
	if n > maxElems {
		return nil, fmt.Errorf("%w: %s: %d elements", errArgument, what, n)
	}
	return unsafe.Slice(p, n), nil
}

// parseSpec decodes a required JSON spec argument into v.
func parseSpec(specJSON *C.char, v any) error {
	s, err := goString(specJSON, "spec")
	if err != nil {
		return err
	}
	// Unknown keys are errors: a misspelt option must not silently keep its default.
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: spec: %v", errArgument, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: spec: trailing data after the JSON object", errArgument)
	}
	return nil
}

// putString hands a Go string to C; the caller frees it with ffcv_free.
func putString(out **C.char, s string) error {
	if out == nil {
		return fmt.Errorf("output: %w", errNil)
	}
	*out = C.CString(s)
	return nil
}

//export ffcv_close
func ffcv_close(h C.int64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	obj, e := handles.remove(int64(h), nil)
	if e != nil {
		return fail(err, e)
	}
	if c, ok := obj.(interface{ Close() error }); ok {
		if e := c.Close(); e != nil {
			return fail(err, e)
		}
	}
	return 0
}

//export ffcv_live_objects
func ffcv_live_objects() C.int64_t {
	return C.int64_t(handles.count() + liveSlots() + int(cache.LivePages()))
}

//export ffcv_goroutines
func ffcv_goroutines() C.int64_t { return C.int64_t(runtime.NumGoroutine()) }

// liveSlots is the number of batch slots callers still hold.
func liveSlots() int { return int(loader.LiveSlots()) }
