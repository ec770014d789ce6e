package main

/*
#define FFCV_GO_TYPES_ONLY
#include "ffcv_go.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
)

// openPath opens the one .beton file p names for reading. Every open of a
// dataset file goes through here: the place for other kinds of paths.
func openPath(p string, custom map[string]field.Column) (*beton.Reader, error) {
	return beton.Open(p, custom)
}

// expandPaths turns what names a dataset into its files, in order: a local
// directory gives its *.beton files and a glob the files it matches, both
// sorted; anything else (a file, a URL) is itself.
func expandPaths(specs []string) ([]string, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("%w: no paths given", errArgument)
	}
	var out []string
	for _, s := range specs {
		if strings.Contains(s, "://") {
			out = append(out, s) // a URL: openPath's business, '?' and all
		} else if st, err := os.Stat(s); err == nil && st.IsDir() {
			m, err := filepath.Glob(filepath.Join(s, "*.beton"))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("%s: %w: the directory holds no .beton files", s, fs.ErrNotExist)
			}
			sort.Strings(m)
			out = append(out, m...)
		} else if err != nil && strings.ContainsAny(s, "*?[") {
			m, err := filepath.Glob(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", errArgument, s, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("%s: %w: the pattern matches no file", s, fs.ErrNotExist)
			}
			sort.Strings(m)
			out = append(out, m...)
		} else {
			out = append(out, s)
		}
	}
	return out, nil
}

// openDataset opens what specs name (see expandPaths): one file as itself,
// several as shards read as one dataset.
func openDataset(specs []string, custom map[string]field.Column) (*beton.Reader, error) {
	paths, err := expandPaths(specs)
	if err != nil {
		return nil, err
	}
	var shards []*beton.Reader
	closeAll := func() {
		for _, r := range shards {
			r.Close()
		}
	}
	for _, p := range paths {
		r, err := openPath(p, custom)
		if err != nil {
			closeAll()
			return nil, err
		}
		shards = append(shards, r)
	}
	if len(shards) == 1 {
		return shards[0], nil
	}
	name := fmt.Sprintf("%s (%d shards)", strings.Join(specs, ", "), len(paths))
	if len(specs) > 2 {
		name = fmt.Sprintf("%s … %s (%d shards)", paths[0], paths[len(paths)-1], len(paths))
	}
	r, err := beton.Join(name, shards)
	if err != nil {
		closeAll()
		return nil, err
	}
	return r, nil
}

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
	r, e := openDataset(specs, custom)
	if e != nil {
		return fail(err, e)
	}
	retainReader(r)
	return C.int64_t(handles.add(readerHandle{r}))
}

//export ffcv_dataset_paths
func ffcv_dataset_paths(pathsJSON *C.char, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	specs, e := parsePaths(pathsJSON)
	if e != nil {
		return fail(err, e)
	}
	paths, e := expandPaths(specs)
	if e != nil {
		return fail(err, e)
	}
	b, _ := json.Marshal(paths)
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return C.int64_t(len(paths))
}

//export ffcv_reader_tables
func ffcv_reader_tables(h C.int64_t, meta *unsafe.Pointer, metaLen *C.uint64_t, allocs *unsafe.Pointer,
	allocsLen *C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	r, done, e := acquireReader(int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if meta == nil || metaLen == nil || allocs == nil || allocsLen == nil {
		return fail(err, errNil)
	}
	m, a := r.Metadata(), r.AllocTable()
	*meta, *metaLen = unsafe.Pointer(unsafe.SliceData(m)), C.uint64_t(len(m))
	*allocs, *allocsLen = unsafe.Pointer(unsafe.SliceData(a)), C.uint64_t(len(a))
	if len(m) == 0 {
		*meta = nil
	}
	if len(a) == 0 {
		*allocs = nil
	}
	return 0
}
