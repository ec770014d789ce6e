package main

/*
#define FFCV_GO_TYPES_ONLY
#include "ffcv_go.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/dataset"
)

func parsePaths(s *C.char) ([]string, error) {
	if s == nil {
		return nil, errNil
	}
	var specs []string
	if err := json.Unmarshal([]byte(C.GoString(s)), &specs); err != nil {
		return nil, fmt.Errorf("%w: paths must be a JSON list of strings: %v", errArgument, err)
	}
	return specs, nil
}

//export ffcv_dataset_open
func ffcv_dataset_open(pathsJSON, customJSON *C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	specs, e := parsePaths(pathsJSON)
	if e != nil {
		return fail(err, e)
	}
	custom, e := parseCustom(customJSON)
	if e != nil {
		return fail(err, e)
	}
	r, e := dataset.Open(specs, dataset.Options{Custom: custom})
	if e != nil {
		return fail(err, e)
	}
	retainReader(r)
	return C.int64_t(handles.add(readerHandle{Reader: r}))
}

//export ffcv_dataset_paths
func ffcv_dataset_paths(pathsJSON *C.char, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	specs, e := parsePaths(pathsJSON)
	if e != nil {
		return fail(err, e)
	}
	paths, e := dataset.Expand(specs, dataset.Options{})
	if e != nil {
		return fail(err, e)
	}
	b, _ := json.Marshal(paths)
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return C.int64_t(len(paths))
}
