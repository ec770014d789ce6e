package main

/*
#define FFCV_GO_TYPES_ONLY
#include "ffcv_go.h"
*/
import "C"

import (
	"encoding/json"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/dataset"
	"github.com/ffcv-go/ffcv-go/core/mixture"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// sourceInfo is what ffcv_mixture_open says of a source.
type sourceInfo struct {
	Name  string   `json:"name"`
	Files []string `json:"files"`
	Start uint64   `json:"start"`   // its first sample in the mixture
	Size  uint64   `json:"samples"` // its samples
	Take  uint64   `json:"take"`    // the samples every epoch takes of it
	// Its pages in the mixture's address space: [first_page, end_page).
	FirstPage uint64 `json:"first_page"`
	EndPage   uint64 `json:"end_page"`
}

//export ffcv_mixture_open
func ffcv_mixture_open(specJSON *C.char, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	var spec mixture.Spec
	if e := parseSpec(specJSON, &spec); e != nil {
		return fail(err, e)
	}
	m, e := mixture.Open(spec, dataset.Options{})
	if e != nil {
		return fail(err, e)
	}
	r := m.Reader
	info := struct {
		Name    string       `json:"name"` // how the reader's errors call the mixture
		Sources []sourceInfo `json:"sources"`
		Side    []sideInfo   `json:"side"`
	}{Name: r.Path, Side: []sideInfo{}}
	file := 0
	for _, p := range m.Parts {
		s := sourceInfo{Name: p.Name, Files: p.Files, Start: p.Start, Size: p.Size, Take: p.Take}
		start, _ := r.ShardRange(file)
		file += len(p.Files)
		_, end := r.ShardRange(file - 1)
		s.FirstPage, s.EndPage = start/r.PageSize(), (end+r.PageSize()-1)/r.PageSize()
		info.Sources = append(info.Sources, s)
	}
	for _, sd := range m.Side {
		info.Side = append(info.Side, sideInfo{Name: sd.Name, Files: sd.Files, Index: sd.Index,
			Size: sd.Reader.NumSamples()})
	}
	b, _ := json.Marshal(info)
	if e := putString(out, string(b)); e != nil {
		m.Close()
		return fail(err, e)
	}
	retainReader(r, sideReaders(m)...)
	return C.int64_t(handles.add(readerHandle{Reader: r, parts: m.OrderParts(), sources: opSources(m)}))
}

// sideInfo is what ffcv_mixture_open says of a side source (weight 0).
type sideInfo struct {
	Name  string   `json:"name"`
	Files []string `json:"files"`
	Index int      `json:"index"`   // its place among the Mixture's sources
	Size  uint64   `json:"samples"` // its samples
}

func sideReaders(m *mixture.Mixture) []*beton.Reader {
	var out []*beton.Reader
	for _, s := range m.Side {
		out = append(out, s.Reader)
	}
	return out
}

// opSources are m's sources, in the user's order, as operations see them.
func opSources(m *mixture.Mixture) []pipeline.Source {
	out := make([]pipeline.Source, len(m.Parts)+len(m.Side))
	for k, p := range m.Parts {
		out[m.Index[k]] = pipeline.Source{Name: p.Name, Reader: m.Reader, Start: p.Start, Size: p.Size}
	}
	for _, s := range m.Side {
		out[s.Index] = pipeline.Source{Name: s.Name, Reader: s.Reader, Size: s.Reader.NumSamples()}
	}
	return out
}
