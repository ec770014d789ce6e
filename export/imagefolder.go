package main

/*
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/dataset"
	"github.com/ffcv-go/ffcv-go/core/imagefolder"
)

//export ffcv_scan_image_folder
func ffcv_scan_image_folder(root *C.char, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	r, e := goString(root, "root")
	if e != nil {
		return fail(err, e)
	}
	f, e := imagefolder.Scan(r)
	if e != nil {
		return fail(err, e)
	}
	b, _ := json.Marshal(f)
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return C.int64_t(len(f.Files))
}

type folderSpec struct {
	PageSize   uint64    `json:"page_size"`
	NumWorkers int       `json:"num_workers"`
	Seed       uint64    `json:"seed"`
	Image      fieldSpec `json:"image"`
}

//export ffcv_write_image_folder
func ffcv_write_image_folder(root, path, specJSON *C.char, progress *C.int64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	r, e := goString(root, "root")
	if e != nil {
		return fail(err, e)
	}
	p, e := goString(path, "path")
	if e != nil {
		return fail(err, e)
	}
	var spec folderSpec
	if e := parseSpec(specJSON, &spec); e != nil {
		return fail(err, e)
	}
	f, e := imagefolder.Scan(r)
	if e != nil {
		return fail(err, e)
	}
	var done atomic.Int64
	stop, stopped := make(chan struct{}), make(chan struct{})
	if progress == nil {
		close(stopped)
	} else {
		// Publish progress to the caller's counter, which it polls; stopped
		// guarantees no write after this call returns.
		dst := (*int64)(unsafe.Pointer(progress))
		go func() {
			defer close(stopped)
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					atomic.StoreInt64(dst, done.Load())
					return
				case <-t.C:
					atomic.StoreInt64(dst, done.Load())
				}
			}
		}()
	}
	e = dataset.Write(p, dataset.Options{}, func(p string) error {
		return f.Write(p, imagefolder.Options{
			Image: spec.Image.imageOptions(spec.Seed), PageSize: spec.PageSize, Workers: spec.NumWorkers, Progress: &done,
		})
	})
	close(stop)
	<-stopped
	if e != nil {
		return fail(err, e)
	}
	return C.int64_t(len(f.Files))
}
