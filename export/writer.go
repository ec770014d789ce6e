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

	"github.com/ffcv-go/ffcv-go/core/audioenc"
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
	KeepCoefficients    bool     `json:"keep_coefficients"`
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
	// TextField: its arguments (tokens, vocabulary, special tokens).
	Text *field.TextArgs `json:"text"`
	// AudioField: its write options (storage, bits, resample).
	Audio *audioenc.Options `json:"audio"`
}

func (s fieldSpec) imageOptions(seed uint64) field.ImageOptions {
	return field.ImageOptions{
		WriteMode: s.WriteMode, MaxResolution: s.MaxResolution, SmartThreshold: s.SmartThreshold,
		JPEGQuality: s.JPEGQuality, CompressProbability: s.CompressProbability, Seed: seed,
		KeepSourceJPEG: s.KeepSourceJPEG || s.KeepCoefficients, SpliceKept: s.KeepCoefficients && s.RestartMarkers,
		ReencodePixels: !s.JPEGTranscode, KeepScans: !s.RestartMarkers,
	}
}

// newEncoder returns the writer's encoder of a built-in field.
func newEncoder(d field.Desc, s fieldSpec, seed uint64) (field.Encoder, error) {
	if d.Type == field.Video {
		return videoenc.NewEncoder(d, videoenc.Options{MaxResolution: s.MaxResolution, JPEGQuality: s.JPEGQuality})
	}
	if d.Type == field.Audio {
		var o audioenc.Options
		if s.Audio != nil {
			o = *s.Audio
		}
		return audioenc.NewEncoder(d, o)
	}
	return imageenc.NewEncoder(d, s.imageOptions(seed))
}

type writerSpec struct {
	NumSamples uint64      `json:"num_samples"`
	PageSize   uint64      `json:"page_size"`
	NumWorkers int         `json:"num_workers"`
	Seed       uint64      `json:"seed"`
	Fields     []fieldSpec `json:"fields"`
	// AtMost: num_samples is a bound, the writer skips bad samples.
	AtMost bool `json:"at_most"`
}

// fileWriter is a beton.Writer with the field types the C side needs, and
// its destination (an s3:// one uploads the file when it is finished).
type fileWriter struct {
	*beton.Writer
	types []field.Type
	dest  *dataset.Dest
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
	descs, encs, custom, e := buildFields(spec.Fields, spec.Seed)
	if e != nil {
		return fail(err, e)
	}
	dest, e := dataset.Create(p, dataset.Options{})
	if e != nil {
		return fail(err, e)
	}
	w, e := beton.Create(dest.Path(), descs, encs, spec.NumSamples,
		beton.WriterOptions{PageSize: spec.PageSize, Workers: spec.NumWorkers, Custom: custom, AtMost: spec.AtMost})
	if e != nil {
		dest.Abort()
		return fail(err, e)
	}
	types := make([]field.Type, len(descs))
	for i, d := range descs {
		types[i] = d.Type
	}
	return C.int64_t(handles.add(fileWriter{w, types, dest}))
}

// buildFields makes the descriptors and encoders of the fields a spec
// describes, and the columns of its custom fields.
func buildFields(specs []fieldSpec, seed uint64) ([]field.Desc, []field.Encoder, map[string]field.Column, error) {
	descs := make([]field.Desc, len(specs))
	encs := make([]field.Encoder, len(specs))
	custom := map[string]field.Column{}
	for i, f := range specs {
		descs[i] = field.Desc{Type: field.Type(f.TypeID), Name: f.Name, Shape: f.Shape, DType: f.DType, Text: f.Text}
		if descs[i].Type == field.Audio && f.Audio != nil {
			descs[i].Audio = &field.AudioArgs{Storage: f.Audio.Storage}
		}
		if descs[i].Type.Targets() {
			descs[i].Target = &field.TargetArgs{DType: f.DType, RowShape: f.Shape, Follows: f.Follows, Coords: f.Coords, Encoding: f.Encoding}
		}
		enc := descs[i]
		if descs[i].Type == field.Custom {
			args, e := hex.DecodeString(f.ArgsHex)
			if e != nil {
				return nil, nil, nil, fmt.Errorf("%w: field %q: args_hex: %v", errArgument, f.Name, e)
			}
			descs[i] = field.Desc{Type: field.Custom, Name: f.Name, Args: args}
			custom[f.Name] = field.Column{Size: f.Column[0], Align: f.Column[1]}
			enc.Type = field.Type(f.Encoder)
		}
		if _, e := descs[i].MarshalBinary(); e != nil {
			return nil, nil, nil, fmt.Errorf("%w: %v", errArgument, e)
		}
		var e error
		if enc.Type == field.Custom {
			encs[i] = field.NewCustomEncoder(f.Name, custom[f.Name])
		} else if encs[i], e = newEncoder(enc, f, seed); e != nil {
			return nil, nil, nil, fmt.Errorf("%w: field %q: %v", errArgument, f.Name, e)
		}
	}
	return descs, encs, custom, nil
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
	nf := len(w.types)
	cv, e := cArray(values, uint64(count)*uint64(nf), "values")
	if e != nil || uint64(count) > maxElems {
		if e == nil {
			e = fmt.Errorf("%w: %d samples in one call", errArgument, count)
		}
		return fail(err, e)
	}
	for k := 0; k < int(count); k++ {
		vals := make([]field.Value, nf)
		for f := range vals {
			c := &cv[k*nf+f]
			if w.types[f] == field.Text {
				v, e := textValue(c)
				if e != nil {
					return fail(err, fmt.Errorf("sample %d, field %d: %w", uint64(first)+uint64(k), f, e))
				}
				vals[f] = v
				continue
			}
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

// textValue reads a TextField's value from its ffcv_value: i captions,
// their UTF-8 bytes one after the other at data, and at column the u32s
// of their byte lengths, then, for tokens, of their token counts and of
// every caption's ids in turn (see include/ffcv_go.h).
func textValue(c *C.ffcv_value) (field.Value, error) {
	n := int64(c.i)
	if n < 0 || n > 1<<24 {
		return field.Value{}, fmt.Errorf("%w: %d captions", errArgument, n)
	}
	data, e := cArray((*byte)(c.data), uint64(c.len), "data")
	if e != nil {
		return field.Value{}, e
	}
	if c.column_len%4 != 0 {
		return field.Value{}, fmt.Errorf("%w: caption lengths of %d bytes, not a whole number of u32s", errArgument, c.column_len)
	}
	lens, e := cArray((*uint32)(c.column), uint64(c.column_len)/4, "column")
	if e != nil {
		return field.Value{}, e
	}
	if int64(len(lens)) < n {
		return field.Value{}, fmt.Errorf("%w: %d caption lengths for %d captions", errArgument, len(lens), n)
	}
	v := field.Value{Texts: make([][]byte, n)}
	at := uint64(0)
	for i := range v.Texts {
		l := uint64(lens[i])
		if at+l > uint64(len(data)) {
			return field.Value{}, fmt.Errorf("%w: caption lengths add up to more than the %d bytes given", errArgument, len(data))
		}
		v.Texts[i] = append([]byte(nil), data[at:at+l]...)
		at += l
	}
	if at != uint64(len(data)) {
		return field.Value{}, fmt.Errorf("%w: caption lengths add up to %d of the %d bytes given", errArgument, at, len(data))
	}
	rest := lens[n:]
	if len(rest) == 0 {
		return v, nil
	}
	if int64(len(rest)) < n {
		return field.Value{}, fmt.Errorf("%w: %d token counts for %d captions", errArgument, len(rest), n)
	}
	counts, ids := rest[:n], rest[n:]
	v.Tokens = make([][]uint32, n)
	for i, k := range counts {
		if uint64(k) > uint64(len(ids)) {
			return field.Value{}, fmt.Errorf("%w: token counts add up to more than the %d ids given", errArgument, len(rest)-int(n))
		}
		v.Tokens[i] = append([]uint32(nil), ids[:k]...)
		ids = ids[k:]
	}
	if len(ids) != 0 {
		return field.Value{}, fmt.Errorf("%w: %d token ids beyond the counts given", errArgument, len(ids))
	}
	return v, nil
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
