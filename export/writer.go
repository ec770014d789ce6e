package main

/*
#define FFCV_GO_TYPES_ONLY
#include "ffcv_go.h"
*/
import "C"

import (
	"encoding/hex"
	"fmt"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/dataset"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/videoenc"
)

type fieldSpec struct {
	Name                string   `json:"name"`
	TypeID              int      `json:"type_id"`
	Shape               []uint64 `json:"shape"`
	DType               string   `json:"dtype"`
	WriteMode           string   `json:"write_mode"`
	MaxResolution       int      `json:"max_resolution"`
	SmartThreshold      int      `json:"smart_threshold"`
	JPEGQuality         int      `json:"jpeg_quality"`
	CompressProbability float64  `json:"compress_probability"`
	KeepSourceJPEG      bool     `json:"keep_source_jpeg"`
	JPEGTranscode       bool     `json:"jpeg_transcode"`
	RestartMarkers      bool     `json:"restart_markers"`
	// Custom (type 255) fields: their argument bytes and metadata column
	// [size, alignment]; encoder is the type id of the built-in encoder to
	// use (a subclass of a built-in field that keeps its encode), or 255
	// when values come encoded by the field's Python encode().
	ArgsHex string `json:"args_hex"`
	Column  [2]int `json:"column"`
	Encoder int    `json:"encoder"`
	// Target fields (RaggedArrayField, MaskField): see field.TargetArgs;
	// shape is a ragged field's row shape.
	Follows  string `json:"follows"`
	Coords   string `json:"coords"`
	Encoding string `json:"encoding"`
}

func (s fieldSpec) imageOptions(seed uint64) field.ImageOptions {
	return field.ImageOptions{
		WriteMode: s.WriteMode, MaxResolution: s.MaxResolution, SmartThreshold: s.SmartThreshold,
		JPEGQuality: s.JPEGQuality, CompressProbability: s.CompressProbability, Seed: seed,
		KeepSourceJPEG: s.KeepSourceJPEG, ReencodePixels: !s.JPEGTranscode, KeepScans: !s.RestartMarkers,
	}
}

// newEncoder returns the writer's encoder of a built-in field.
func newEncoder(d field.Desc, s fieldSpec, seed uint64) (field.Encoder, error) {
	if d.Type == field.Video {
		return videoenc.NewEncoder(d, videoenc.Options{MaxResolution: s.MaxResolution, JPEGQuality: s.JPEGQuality})
	}
	return imageenc.NewEncoder(d, s.imageOptions(seed))
}

type writerSpec struct {
	NumSamples uint64      `json:"num_samples"`
	PageSize   uint64      `json:"page_size"`
	NumWorkers int         `json:"num_workers"`
	Seed       uint64      `json:"seed"`
	Fields     []fieldSpec `json:"fields"`
}

// fileWriter is a beton.Writer with the field count the C side needs, and
// its destination (an s3:// one uploads the file when it is finished).
type fileWriter struct {
	*beton.Writer
	nf   int
	dest *dataset.Dest
}

func (w fileWriter) Close() error { w.abort(); return nil }

func (w fileWriter) abort() {
	w.Abort()
	w.dest.Abort()
}

//export ffcv_writer_create
func ffcv_writer_create(path, specJSON *C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	p, e := goString(path, "path")
	if e != nil {
		return fail(err, e)
	}
	var spec writerSpec
	if e := parseSpec(specJSON, &spec); e != nil {
		return fail(err, e)
	}
	descs := make([]field.Desc, len(spec.Fields))
	encs := make([]field.Encoder, len(spec.Fields))
	custom := map[string]field.Column{}
	for i, f := range spec.Fields {
		descs[i] = field.Desc{Type: field.Type(f.TypeID), Name: f.Name, Shape: f.Shape, DType: f.DType}
		if descs[i].Type.Targets() {
			descs[i].Target = &field.TargetArgs{DType: f.DType, RowShape: f.Shape, Follows: f.Follows, Coords: f.Coords, Encoding: f.Encoding}
		}
		enc := descs[i]
		if descs[i].Type == field.Custom {
			args, e := hex.DecodeString(f.ArgsHex)
			if e != nil {
				return fail(err, fmt.Errorf("%w: field %q: args_hex: %v", errArgument, f.Name, e))
			}
			descs[i] = field.Desc{Type: field.Custom, Name: f.Name, Args: args}
			custom[f.Name] = field.Column{Size: f.Column[0], Align: f.Column[1]}
			enc.Type = field.Type(f.Encoder)
		}
		if _, e := descs[i].MarshalBinary(); e != nil {
			return fail(err, fmt.Errorf("%w: %v", errArgument, e))
		}
		if enc.Type == field.Custom {
			encs[i] = field.NewCustomEncoder(f.Name, custom[f.Name])
		} else if encs[i], e = newEncoder(enc, f, spec.Seed); e != nil {
			return fail(err, fmt.Errorf("%w: field %q: %v", errArgument, f.Name, e))
		}
	}
	dest, e := dataset.Create(p, dataset.Options{})
	if e != nil {
		return fail(err, e)
	}
	w, e := beton.Create(dest.Path(), descs, encs, spec.NumSamples,
		beton.WriterOptions{PageSize: spec.PageSize, Workers: spec.NumWorkers, Custom: custom})
	if e != nil {
		dest.Abort()
		return fail(err, e)
	}
	return C.int64_t(handles.add(fileWriter{w, len(descs), dest}))
}

//export ffcv_writer_put
func ffcv_writer_put(h C.int64_t, first, count C.uint64_t, values *C.ffcv_value, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	w, done, e := acquire[fileWriter](int64(h))
	defer done()
	if e != nil {
		return fail(err, e)
	}
	if count == 0 {
		return 0
	}
	cv, e := cArray(values, uint64(count)*uint64(w.nf), "values")
	if e != nil || uint64(count) > maxElems {
		if e == nil {
			e = fmt.Errorf("%w: %d samples in one call", errArgument, count)
		}
		return fail(err, e)
	}
	for k := 0; k < int(count); k++ {
		vals := make([]field.Value, w.nf)
		for f := range vals {
			c := &cv[k*w.nf+f]
			v := field.Value{Int: int64(c.i), Float: float64(c.f), Width: int(c.width), Height: int(c.height),
				Channels: int(c.channels), Encoded: c.encoded == 1, PtrOffset: int(c.ptr_offset)}
			if c.column_len > 0 {
				if c.column == nil {
					return fail(err, fmt.Errorf("sample %d, field %d: column: %w", uint64(first)+uint64(k), f, errNil))
				}
				v.Column = append([]byte(nil), unsafe.Slice((*byte)(c.column), int(c.column_len))...)
			}
			if c.len > 0 {
				if c.data == nil {
					return fail(err, fmt.Errorf("sample %d, field %d: data: %w", uint64(first)+uint64(k), f, errNil))
				}
				// Copy: the caller's buffer is only valid during this call.
				v.Data = append([]byte(nil), unsafe.Slice((*byte)(c.data), int(c.len))...)
			}
			if c.encoded == 2 { // a file path: the encoder reads it in its worker
				v.Path, v.Data = string(v.Data), nil
				if v.Path == "" {
					return fail(err, fmt.Errorf("%w: sample %d, field %d: empty image path", errArgument, uint64(first)+uint64(k), f))
				}
			}
			vals[f] = v
		}
		if e := w.Put(uint64(first)+uint64(k), vals); e != nil {
			return fail(err, e)
		}
	}
	return 0
}

//export ffcv_writer_finish
func ffcv_writer_finish(h C.int64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	w, e := take[fileWriter](int64(h))
	if e != nil {
		return fail(err, e)
	}
	if e := w.dest.Finish(w.Writer.Close()); e != nil {
		return fail(err, e)
	}
	return 0
}

//export ffcv_writer_abort
func ffcv_writer_abort(h C.int64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	w, e := take[fileWriter](int64(h))
	if e != nil {
		return fail(err, e)
	}
	w.abort()
	return 0
}
