package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/remote"
)

// Columns maps the named, typed columns of datasets stored as tables of
// samples (MosaicML Streaming's MDS, litdata) to the fields of a .beton:
// field i takes column Take[i]. A column's encoding says what its bytes
// are; each field kind takes the encodings that can make its value:
//   - RGBImageField: image files (jpeg, png, litdata's image), raw pixels
//     (pil: L, RGB, RGBA) or bytes holding an image file;
//   - IntField: integers (int, int8 ... uint64, bool, str_int);
//   - FloatField: numbers (those, float16/32/64, str_float, str_decimal);
//   - TextField: str, or json holding a string or a list of strings;
//   - JSONField: json, or str holding JSON;
//   - BytesField: any column, its bytes as stored;
//   - AudioField: bytes holding an audio file (WAV, FLAC, MP3, Ogg/Opus).
//
// An image file's bytes go to the image encoder as they are, so a JPEG
// that needs no resize can be kept byte for byte (KeepSourceJPEG).
type Columns struct {
	Fields []field.Desc
	Take   []string
	Remote remote.Options
}

// Col is a column of a table: its name and encoding, in the vocabulary
// above (the format's readers translate their own names to it).
type Col struct {
	Name     string
	Encoding string
}

// Table is one shard of a dataset, loaded: its columns, its number of
// rows, and row i's bytes, one slice per column.
type Table struct {
	Cols []Col
	Rows int
	Row  func(i int) ([][]byte, error)
}

// Check reports a mapping that cannot work.
func (c *Columns) Check() error {
	if len(c.Take) != len(c.Fields) {
		return fmt.Errorf("%d columns for %d fields", len(c.Take), len(c.Fields))
	}
	for i, d := range c.Fields {
		switch d.Type {
		case field.RGBImage, field.Audio, field.Int, field.Float, field.Text, field.JSON, field.Bytes:
		default:
			return fmt.Errorf("field %q: a %v cannot come from a column", d.Name, d.Type)
		}
		if c.Take[i] == "" {
			return fmt.Errorf("field %q: no column to take it from", d.Name)
		}
	}
	return nil
}

// Source is a source of the samples of one shard, loaded by load when
// first read.
func (c *Columns) Source(name string, load func() (*Table, error)) Source {
	return &tableSource{name: name, spec: c, load: load}
}

type tableSource struct {
	name string
	spec *Columns
	load func() (*Table, error)
	t    *Table
	pick []int // the column of each field
	next int
}

func (s *tableSource) Name() string { return remote.Redact(s.name) }
func (s *tableSource) Close() error { s.t = nil; return nil }

func (s *tableSource) Next() (*Item, error) {
	if s.t == nil {
		t, err := s.load()
		if err != nil {
			return nil, err
		}
		if s.pick, err = s.spec.columns(t.Cols); err != nil {
			return nil, err
		}
		s.t = t
	}
	if s.next >= s.t.Rows {
		return nil, io.EOF
	}
	i := s.next
	s.next++
	vals, err := s.t.Row(i)
	if err != nil {
		return nil, err
	}
	it := &Item{Key: fmt.Sprintf("sample %d", i), Values: make([]field.Value, len(s.spec.Fields))}
	for f, d := range s.spec.Fields {
		col := s.t.Cols[s.pick[f]]
		v, err := fromColumn(d, col.Encoding, vals[s.pick[f]])
		if err != nil {
			it.Problems = append(it.Problems, Problem{Member: col.Name, Reason: fmt.Sprintf("field %q: %v", d.Name, err), Dropped: true})
			continue
		}
		it.Values[f] = v
	}
	return it, nil
}

// columns finds each field's column and checks that its encoding can make
// the field's value.
func (c *Columns) columns(cols []Col) ([]int, error) {
	pick := make([]int, len(c.Fields))
	for f, d := range c.Fields {
		pick[f] = -1
		for k, col := range cols {
			if col.Name == c.Take[f] {
				pick[f] = k
			}
		}
		if pick[f] < 0 {
			names := make([]string, len(cols))
			for k, col := range cols {
				names[k] = col.Name
			}
			return nil, fmt.Errorf("field %q: no column %q (columns: %s)", d.Name, c.Take[f], strings.Join(names, ", "))
		}
		if enc := cols[pick[f]].Encoding; !canTake(d.Type, enc) {
			return nil, fmt.Errorf("field %q: column %q holds %s, which an %v cannot take", d.Name, c.Take[f], enc, d.Type)
		}
	}
	return pick, nil
}

var intEncodings = map[string]int{"int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
	"int64": 8, "uint64": 8, "bool": 1}

func canTake(t field.Type, enc string) bool {
	_, isInt := intEncodings[enc]
	isFloat := enc == "float16" || enc == "float32" || enc == "float64"
	switch t {
	case field.RGBImage:
		return enc == "jpeg" || enc == "png" || enc == "image" || enc == "pil" || enc == "bytes"
	case field.Int:
		return isInt || enc == "str_int"
	case field.Float:
		return isInt || isFloat || enc == "str_int" || enc == "str_float" || enc == "str_decimal"
	case field.Text:
		return enc == "str" || enc == "json"
	case field.JSON:
		return enc == "json" || enc == "str"
	case field.Bytes:
		return true
	case field.Audio:
		return enc == "bytes"
	}
	return false
}

// fromColumn makes a field value from a column's bytes (canTake(d.Type, enc)).
func fromColumn(d field.Desc, enc string, b []byte) (field.Value, error) {
	switch d.Type {
	case field.RGBImage:
		if enc == "pil" {
			return pilPixels(b)
		}
		return field.Value{Data: b, Encoded: true}, nil
	case field.Audio:
		return field.Value{Data: b, Encoded: true}, nil
	case field.Int:
		x, _, err := number(enc, b)
		return field.Value{Int: x}, err
	case field.Float:
		x, f, err := number(enc, b)
		if _, isInt := intEncodings[enc]; isInt || enc == "str_int" {
			f = float64(x)
		}
		return field.Value{Float: f}, err
	case field.Text:
		if enc == "str" {
			return field.Value{Texts: [][]byte{b}}, nil
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return field.Value{}, fmt.Errorf("not valid JSON: %v", err)
		}
		out, err := jsonCaptions(v)
		if err != nil {
			return field.Value{}, fmt.Errorf("the JSON %v", err)
		}
		return out, nil
	case field.JSON:
		if !json.Valid(b) {
			return field.Value{}, fmt.Errorf("not valid JSON: %q", clip(b))
		}
		return field.Value{Data: bytes.TrimSpace(b)}, nil
	}
	return field.Value{Data: b}, nil
}

// number reads an integer (x) or a float (f) column value.
func number(enc string, b []byte) (x int64, f float64, err error) {
	if n, ok := intEncodings[enc]; ok {
		if len(b) != n {
			return 0, 0, fmt.Errorf("%d bytes for an %s", len(b), enc)
		}
		switch enc {
		case "int8":
			x = int64(int8(b[0]))
		case "uint8", "bool":
			x = int64(b[0])
		case "int16":
			x = int64(int16(binary.LittleEndian.Uint16(b)))
		case "uint16":
			x = int64(binary.LittleEndian.Uint16(b))
		case "int32":
			x = int64(int32(binary.LittleEndian.Uint32(b)))
		case "uint32":
			x = int64(binary.LittleEndian.Uint32(b))
		case "int64":
			x = int64(binary.LittleEndian.Uint64(b))
		case "uint64":
			u := binary.LittleEndian.Uint64(b)
			if u > math.MaxInt64 {
				return 0, 0, fmt.Errorf("uint64 %d does not fit an IntField (int64)", u)
			}
			x = int64(u)
		}
		return x, 0, nil
	}
	switch enc {
	case "float16":
		if len(b) != 2 {
			return 0, 0, fmt.Errorf("%d bytes for a float16", len(b))
		}
		return 0, half(binary.LittleEndian.Uint16(b)), nil
	case "float32":
		if len(b) != 4 {
			return 0, 0, fmt.Errorf("%d bytes for a float32", len(b))
		}
		return 0, float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), nil
	case "float64":
		if len(b) != 8 {
			return 0, 0, fmt.Errorf("%d bytes for a float64", len(b))
		}
		return 0, math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case "str_int":
		x, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("not an integer: %q", clip(b))
		}
		return x, 0, nil
	}
	f, err = strconv.ParseFloat(strings.TrimSpace(string(b)), 64) // str_float, str_decimal
	if err != nil {
		return 0, 0, fmt.Errorf("not a number: %q", clip(b))
	}
	return 0, f, nil
}

// half converts an IEEE 754 half-precision float.
func half(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10)&0x1f, float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

// pilPixels reads Streaming's and litdata's "pil" encoding: width, height
// and the mode's length (uint32s), the mode, then the raw pixels.
func pilPixels(b []byte) (field.Value, error) {
	if len(b) < 12 {
		return field.Value{}, fmt.Errorf("%d bytes: not a pil image", len(b))
	}
	w, h, m := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:])), int(binary.LittleEndian.Uint32(b[8:]))
	if m > len(b)-12 {
		return field.Value{}, fmt.Errorf("a pil image whose mode runs past its end")
	}
	mode := string(b[12 : 12+m])
	channels := map[string]int{"L": 1, "RGB": 3, "RGBA": 4}[mode]
	if channels == 0 {
		return field.Value{}, fmt.Errorf("a pil image of mode %q (L, RGB and RGBA are taken)", mode)
	}
	pix := b[12+m:]
	if w <= 0 || h <= 0 || len(pix) != w*h*channels {
		return field.Value{}, fmt.Errorf("a %dx%d %s pil image with %d bytes of pixels", w, h, mode, len(pix))
	}
	return field.Value{Data: pix, Width: w, Height: h, Channels: channels}, nil
}

// readFile reads a whole file: a local path or an s3:// or http(s):// URL.
func readFile(name string, opts remote.Options) ([]byte, error) {
	if !remote.IsURL(name) {
		return os.ReadFile(name)
	}
	o, err := remote.Open(context.Background(), name, opts)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	b := make([]byte, o.Size())
	if n, err := o.ReadAt(b, 0); err != nil && !(err == io.EOF && n == len(b)) {
		return nil, err
	}
	return b, nil
}

// inDir names file name in the dataset directory root (a path or a URL).
func inDir(root, name string) string {
	if remote.IsURL(root) {
		return strings.TrimSuffix(root, "/") + "/" + name
	}
	return filepath.Join(root, name)
}
