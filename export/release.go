package main

/*
#include <stdint.h>
*/
import "C"

import (
	"fmt"
	"os"
)

// ffcvGoRelease runs inside a DLPack deleter (torch's, or the caller's), which
// cannot report an error: a panic here must not abort the interpreter, so it
// is recovered and reported on stderr.
//
//export ffcvGoRelease
func ffcvGoRelease(key C.uint64_t) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "ffcv_go: internal error releasing tensor %d: %v\n", uint64(key), r)
		}
	}()
	releaseTensorRef(uint64(key))
}
