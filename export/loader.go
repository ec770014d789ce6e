package main

/*
#define FFCV_GO_TYPES_ONLY
#include "ffcv_go.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/dataset"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/loader"
	"github.com/ffcv-go/ffcv-go/core/order"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/ops" // every built-in operation
	"github.com/ffcv-go/ffcv-go/core/trace"
)

type outputSpec struct {
	Field int               `json:"field"`
	Name  string            `json:"name"` // the user's name of the output, for messages
	Ops   []json.RawMessage `json:"ops"`
	// Sources, for a mixture, has a program for some sources' samples
	// (null for the others): see loader.Config.SourcePrograms.
	Sources [][]json.RawMessage `json:"sources"`
}

// label names output k in messages: by the user's name where it has one.
func (o *outputSpec) label(k int) string {
	if o.Name != "" {
		return fmt.Sprintf("output %q", o.Name)
	}
	return fmt.Sprintf("output %d", k)
}

type loaderSpec struct {
	Reader           int64             `json:"reader"` // an open reader's handle, or
	Path             string            `json:"path"`   // a file to open
	Custom           map[string][2]int `json:"custom"`
	BatchSize        int               `json:"batch_size"`
	NumWorkers       int               `json:"num_workers"`
	BatchesAhead     int               `json:"batches_ahead"`
	DropLast         bool              `json:"drop_last"`
	Seed             uint64            `json:"seed"`
	Order            string            `json:"order"`
	Rank             int               `json:"rank"`
	World            int               `json:"world"`
	OSCache          bool              `json:"os_cache"`
	MaxResidentPages int               `json:"max_resident_pages"`
	QuasiWindow      int               `json:"quasi_window"`
	DurationField    string            `json:"duration_field"` // the bucketed order's
	MaxDuration      float64           `json:"max_duration"`
	NumBuckets       int               `json:"num_buckets"`
	SkipErrors       bool              `json:"skip_errors"`
	MaxBatchMemory   int64             `json:"max_batch_memory"`
	Trace            string            `json:"trace"`
	Outputs          []outputSpec      `json:"outputs"`
}

// fileLoader is a loader with the reader it holds a reference to.
type fileLoader struct {
	*loader.Loader
	r       *beton.Reader
	sources []pipeline.Source // a mixture's, for the tail programs' operations
}

func (l fileLoader) Close() error {
	l.Loader.Close()
	return releaseReader(l.r)
}

// stop ends the loader's epochs before ffcv_close waits for calls in flight.
func (l fileLoader) stop() { l.Loader.Close() }

// fileIter is an iterator handle.
type fileIter struct {
	*loader.Iterator
	specs []pipeline.Spec
}

// stop makes a blocked ffcv_iter_next return before ffcv_close waits for it.
func (it fileIter) stop() { it.Iterator.Close() }

//export ffcv_loader_create
func ffcv_loader_create(specJSON *C.char, indices *C.uint64_t, nIndices C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	defer faultsPanic()()
	var spec loaderSpec
	if e := parseSpec(specJSON, &spec); e != nil {
		return fail(err, e)
	}
	var r *beton.Reader
	var parts []order.Part
	var sources []pipeline.Source
	var e error
	if spec.Reader != 0 {
		// The file the caller has open: opened and mapped once.
		h, done, e := acquire[readerHandle](spec.Reader)
		defer done()
		if e != nil {
			return fail(err, e)
		}
		r, parts, sources = h.Reader, h.parts, h.sources
	} else {
		custom := map[string]field.Column{}
		for k, v := range spec.Custom {
			custom[k] = field.Column{Size: v[0], Align: v[1]}
		}
		if r, e = dataset.OpenFile(spec.Path, dataset.Options{Custom: custom}); e != nil {
			return fail(err, e)
		}
	}
	retainReader(r)
	l, e := buildLoader(r, parts, sources, &spec, indices, nIndices)
	if e != nil {
		releaseReader(r)
		return fail(err, e)
	}
	return C.int64_t(handles.add(fileLoader{l, r, sources}))
}

func buildLoader(r *beton.Reader, parts []order.Part, sources []pipeline.Source, spec *loaderSpec, indices *C.uint64_t, n C.uint64_t) (*loader.Loader, error) {
	progs := make([]*pipeline.Program, len(spec.Outputs))
	var bySource [][]*pipeline.Program
	for k, o := range spec.Outputs {
		p, err := pipeline.Build(r, o.Field, o.Ops, sources...)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errArgument, o.label(k), err)
		}
		if _, _, _, err := dlType(p.Out.DType); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errArgument, o.label(k), err)
		}
		progs[k] = p
		for s, ops := range o.Sources {
			if ops == nil {
				continue
			}
			if bySource == nil {
				bySource = make([][]*pipeline.Program, len(spec.Outputs))
			}
			if bySource[k] == nil {
				bySource[k] = make([]*pipeline.Program, len(o.Sources))
			}
			if bySource[k][s], err = pipeline.Build(r, o.Field, ops, sources...); err != nil {
				return nil, fmt.Errorf("%w: %s, source %d: %v", errArgument, o.label(k), s, err)
			}
		}
	}
	mode, err := trace.ParseMode(spec.Trace)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errArgument, err)
	}
	cfg := loader.Config{
		BatchSize: spec.BatchSize, Workers: spec.NumWorkers, BatchesAhead: spec.BatchesAhead,
		DropLast: spec.DropLast, Seed: spec.Seed, Order: spec.Order, Rank: spec.Rank, World: spec.World,
		OSCache: spec.OSCache, MaxResidentPages: spec.MaxResidentPages, QuasiWindow: spec.QuasiWindow,
		SkipErrors: spec.SkipErrors, MaxBatchMemory: spec.MaxBatchMemory, Trace: mode, Mixture: parts,
		SourcePrograms: bySource, DurationField: spec.DurationField, MaxDuration: spec.MaxDuration,
		NumBuckets: spec.NumBuckets,
	}
	idx, err := cArray((*uint64)(unsafe.Pointer(indices)), uint64(n), "indices")
	if err != nil {
		return nil, err
	}
	if indices != nil {
		cfg.Indices = append([]uint64{}, idx...)
	}
	l, err := loader.New(r, cfg, progs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errArgument, err)
	}
	return l, nil
}

type outputInfo struct {
	Shape     []int  `json:"shape"`
	DType     string `json:"dtype"`
	SlotBytes int    `json:"slot_bytes"`
}

//export ffcv_loader_info
func ffcv_loader_info(h C.int64_t, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	l, done, e := acquire[fileLoader](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	info := struct {
		Length  int          `json:"length"`
		Samples int          `json:"samples"`
		Global  int          `json:"global_samples"`
		Layout  order.Layout `json:"layout"`
		Outputs []outputInfo `json:"outputs"`
	}{Samples: l.NumSamples(), Global: l.GlobalSamples(), Layout: l.Layout()}
	// Epoch 0's: a bucketed order's number of batches varies by epoch.
	if info.Length, e = l.Batches(0); e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	for k, s := range l.Outputs() {
		info.Outputs = append(info.Outputs, outputInfo{s.Shape, s.DType, l.SlotBytes()[k]})
	}
	b, _ := json.Marshal(info)
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return 0
}

//export ffcv_loader_order
func ffcv_loader_order(h C.int64_t, epoch C.uint64_t, out *C.uint64_t, capacity C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	l, done, e := acquire[fileLoader](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	ord, _, e := l.RankOrder(uint64(epoch))
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	dst, e := cArray((*uint64)(unsafe.Pointer(out)), uint64(capacity), "out")
	if e != nil && out != nil {
		return fail(err, e)
	}
	copy(dst, ord)
	return C.int64_t(len(ord))
}

type elasticSpec struct {
	Epoch  uint64        `json:"epoch"`
	Order  string        `json:"order"`  // the saving run's order name
	Window int           `json:"window"` // its QUASI_RANDOM window (0: the loader's)
	Stages []order.Stage `json:"stages"` // what it took (none: only describe the order)
}

//export ffcv_loader_elastic
func ffcv_loader_elastic(h C.int64_t, specJSON *C.char, global *C.uint64_t, nGlobal C.uint64_t, out *C.uint64_t,
	capacity C.uint64_t, info **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	l, done, e := acquire[fileLoader](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	var spec elasticSpec
	if e := parseSpec(specJSON, &spec); e != nil {
		return fail(err, e)
	}
	given, e := cArray((*uint64)(unsafe.Pointer(global)), uint64(nGlobal), "global")
	if e != nil {
		return fail(err, e)
	}
	window := spec.Window
	if window <= 0 {
		window = l.QuasiWindow()
	}
	var g []uint64
	if global != nil {
		g = given // a permutation made in Python (distributed RANDOM draws torch's)
		for _, id := range g {
			if id >= l.Reader().NumSamples() {
				return fail(err, fmt.Errorf("%w: global order names sample %d; the file has %d", errArgument, id,
					l.Reader().NumSamples()))
			}
		}
	} else {
		if g, e = l.GlobalOrderAs(spec.Epoch, spec.Order, window); e != nil {
			return fail(err, fmt.Errorf("%w: %v", errArgument, e))
		}
	}
	var ord []uint64
	remaining, length := 0, 0
	switch {
	case len(spec.Stages) > 0 && spec.Order == "bucketed":
		var bounds []int
		if ord, bounds, remaining, e = l.ResumeBatches(spec.Epoch, spec.Stages); e != nil {
			return fail(err, fmt.Errorf("%w: %v", errArgument, e))
		}
		length = len(bounds) - 1
	case len(spec.Stages) > 0:
		rest, e := order.Remaining(g, spec.Stages)
		if e != nil {
			return fail(err, fmt.Errorf("%w: %v", errArgument, e))
		}
		ord, remaining = l.Resume(rest), len(rest)
		length = l.Len(len(ord))
	default:
		if length, e = l.Batches(spec.Epoch); e != nil {
			return fail(err, fmt.Errorf("%w: %v", errArgument, e))
		}
	}
	if len(spec.Stages) > 0 {
		dst, e := cArray((*uint64)(unsafe.Pointer(out)), uint64(capacity), "out")
		if e != nil || len(dst) < len(ord) {
			return fail(err, fmt.Errorf("%w: out: room for %d ids, %d needed", errArgument, capacity, len(ord)))
		}
		copy(dst, ord)
	}
	b, _ := json.Marshal(map[string]any{
		"fingerprint": fmt.Sprintf("%016x", order.Fingerprint(g)), "samples": len(g), "window": window,
		"remaining": remaining, "length": length,
	})
	if e := putString(info, string(b)); e != nil {
		return fail(err, e)
	}
	return C.int64_t(len(ord))
}

//export ffcv_loader_start
func ffcv_loader_start(h C.int64_t, epoch, startBatch C.uint64_t, order *C.uint64_t, nOrder C.uint64_t,
	perRank C.int32_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	defer faultsPanic()()
	l, done, e := acquire[fileLoader](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	src, e := cArray((*uint64)(unsafe.Pointer(order)), uint64(nOrder), "order")
	if e != nil {
		return fail(err, e)
	}
	var ord []uint64
	if order != nil {
		ord = append([]uint64{}, src...)
	}
	it, e := l.Start(uint64(epoch), int(startBatch), ord, perRank != 0)
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	// The last tensor of every batch holds its sample ids.
	specs := append(l.Outputs(), pipeline.Spec{DType: "<i8"})
	return C.int64_t(handles.add(fileIter{it, specs}))
}

//export ffcv_iter_next
func ffcv_iter_next(h C.int64_t, tensors **C.ffcv_DLManagedTensor, maxTensors C.int32_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	it, done, e := acquire[fileIter](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if int(maxTensors) < len(it.specs) || (tensors == nil && len(it.specs) > 0) {
		return fail(err, fmt.Errorf("%w: room for %d tensors, the loader has %d outputs", errArgument, maxTensors, len(it.specs)))
	}
	b, e := it.Next()
	if e != nil {
		return fail(err, e)
	}
	if b == nil {
		return 0
	}
	if e := exportBatch(b, it.specs, unsafe.Slice(tensors, len(it.specs))); e != nil {
		return fail(err, e)
	}
	return C.int64_t(len(it.specs))
}

//export ffcv_loader_stats
func ffcv_loader_stats(h C.int64_t, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	l, done, e := acquire[fileLoader](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	b, _ := json.Marshal(l.Stats())
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return 0
}

// The Go span must be laid out as the C one, which ffcv_loader_trace fills.
var _ = [1]struct{}{}[unsafe.Sizeof(trace.Event{})-unsafe.Sizeof(C.ffcv_trace_event{})]

//export ffcv_loader_trace
func ffcv_loader_trace(h C.int64_t, out *C.ffcv_trace_event, capacity C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	l, done, e := acquire[fileLoader](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if out == nil {
		return C.int64_t(l.TracePending())
	}
	dst, e := cArray((*trace.Event)(unsafe.Pointer(out)), uint64(capacity), "out")
	if e != nil {
		return fail(err, e)
	}
	return C.int64_t(l.Trace(dst))
}

// tailProgram is a handle on built-in operations that run on batches a
// Python stage produced, with the randomness of the loader they belong to.
type tailProgram struct {
	l *loader.Loader
	p *pipeline.Program
}

type tailSpec struct {
	Field int               `json:"field"`
	In    pipeline.Spec     `json:"in"`
	Ops   []json.RawMessage `json:"ops"`
}

//export ffcv_loader_tail
func ffcv_loader_tail(h C.int64_t, specJSON *C.char, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	l, done, e := acquire[fileLoader](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	var spec tailSpec
	if e := parseSpec(specJSON, &spec); e != nil {
		return fail(err, e)
	}
	if _, _, _, e := dlType(spec.In.DType); e != nil {
		return fail(err, fmt.Errorf("%w: tail input: %v", errArgument, e))
	}
	p, e := pipeline.BuildTail(l.r, spec.Field, spec.In, spec.Ops, l.sources...)
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	b, _ := json.Marshal(p.Out)
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return C.int64_t(handles.add(tailProgram{l.Loader, p}))
}

//export ffcv_tail_run
func ffcv_tail_run(h C.int64_t, epoch, batch C.uint64_t, ids *C.uint64_t, n C.uint64_t,
	in unsafe.Pointer, inLen C.uint64_t, out unsafe.Pointer, outLen C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	t, done, e := acquire[tailProgram](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	idv, e := cArray((*uint64)(unsafe.Pointer(ids)), uint64(n), "ids")
	if e != nil {
		return fail(err, e)
	}
	src, e := cArray((*byte)(in), uint64(inLen), "in")
	if e != nil {
		return fail(err, e)
	}
	dst, e := cArray((*byte)(out), uint64(outLen), "out")
	if e != nil {
		return fail(err, e)
	}
	if e := t.l.RunTail(t.p, uint64(epoch), int(batch), idv, src, dst); e != nil {
		return fail(err, e)
	}
	return 0
}
