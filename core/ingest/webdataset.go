package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/remote"
	"github.com/ffcv-go/ffcv-go/core/webdataset"
)

// Take says which members of a webdataset sample make a field's value:
// the first of Exts the sample has ("jpg", "png"); with JSONKey, the value
// at that dotted key path of the JSON member Exts[0] ("json").
type Take struct {
	Exts    []string
	JSONKey string
}

// WebDataset maps webdataset samples to the fields of a .beton:
//   - RGBImageField: the image file's bytes, for the image encoder;
//   - TextField: a text member as one caption, or a JSON string or list
//     of strings as one or several captions;
//   - IntField, FloatField: a number in a text member (.cls) or in JSON;
//   - JSONField: a JSON member, or the JSON value at a key;
//   - BytesField: a member's bytes;
//   - AudioField: the audio file's bytes (WAV, FLAC, MP3, Ogg/Opus), for
//     the audio encoder, which refuses a corrupt or truncated one.
type WebDataset struct {
	Fields []field.Desc
	Take   []Take
	// Ignore lists extensions the shards hold that no field takes; any
	// other member that no field takes is reported.
	Ignore []string
	Remote remote.Options
}

// Check reports a mapping that cannot work.
func (w *WebDataset) Check() error {
	if len(w.Take) != len(w.Fields) {
		return fmt.Errorf("%d member mappings for %d fields", len(w.Take), len(w.Fields))
	}
	for i, t := range w.Take {
		d := w.Fields[i]
		if len(t.Exts) == 0 {
			return fmt.Errorf("field %q: no member extension to take it from", d.Name)
		}
		if t.JSONKey != "" && len(t.Exts) != 1 {
			return fmt.Errorf("field %q: a JSON key is read from one member, not %s", d.Name, strings.Join(t.Exts, ";"))
		}
		switch d.Type {
		case field.RGBImage, field.Audio:
			if t.JSONKey != "" {
				return fmt.Errorf("field %q: a %v comes from a file member, not a JSON key", d.Name, d.Type)
			}
		case field.Text, field.Int, field.Float, field.JSON, field.Bytes:
		default:
			return fmt.Errorf("field %q: a %v cannot be read from webdataset members", d.Name, d.Type)
		}
	}
	return nil
}

// Sources returns a source per shard (a path or an s3:// or http(s)://
// URL), each opened when first read.
func (w *WebDataset) Sources(shards []string) []Source {
	out := make([]Source, len(shards))
	for i, s := range shards {
		out[i] = &wdsSource{name: s, spec: w}
	}
	return out
}

type wdsSource struct {
	name string
	spec *WebDataset

	mu     sync.Mutex
	rc     io.ReadCloser
	closed bool
	r      *webdataset.Reader
}

func (s *wdsSource) Name() string { return remote.Redact(s.name) }

func (s *wdsSource) Next() (*Item, error) {
	if s.r == nil {
		rc, err := webdataset.Open(context.Background(), s.name, s.spec.Remote)
		if err != nil {
			return nil, s.shardProblem(err)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			rc.Close()
			return nil, fmt.Errorf("%s: closed", s.Name())
		}
		s.rc = rc
		s.mu.Unlock()
		if s.r, err = webdataset.NewReader(rc); err != nil {
			return nil, s.shardProblem(err)
		}
	}
	sample, err := s.r.Next()
	var damage *webdataset.Error
	switch {
	case err == io.EOF:
		return nil, err
	case errors.As(err, &damage) && damage.Key != "":
		reason := damage.Err.Error()
		if damage.After {
			reason = "after this member: " + reason
		}
		return nil, Problem{Key: damage.Key, Member: damage.Member, Reason: reason, Dropped: true, Err: err}
	case errors.As(err, &damage):
		return nil, s.shardProblem(damage.Err)
	case err != nil:
		return nil, s.shardProblem(err)
	}
	return s.spec.item(sample), nil
}

// shardProblem is err, which costs the whole shard, saying what without
// naming the shard again (a report's problem and its error name it once).
func (s *wdsSource) shardProblem(err error) Problem {
	reason := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		reason = pe.Op + ": " + pe.Err.Error()
	}
	reason = strings.TrimPrefix(reason, s.Name()+": ")
	return Problem{Reason: reason, Shard: true, Err: err}
}

func (s *wdsSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.rc != nil {
		return s.rc.Close()
	}
	return nil
}

// item makes a sample's values; what it cannot make becomes a problem.
func (w *WebDataset) item(s *webdataset.Sample) *Item {
	it := &Item{Key: s.Key, Values: make([]field.Value, len(w.Fields))}
	used := map[string]bool{}
	parsed := map[string]any{}
	for i, t := range w.Take {
		d := w.Fields[i]
		var m *webdataset.Member
		for _, ext := range t.Exts {
			if m = s.Member(ext); m != nil {
				break
			}
		}
		if m == nil {
			it.Problems = append(it.Problems, Problem{Reason: fmt.Sprintf("no %s member for field %q", strings.Join(t.Exts, " or "), d.Name), Dropped: true})
			continue
		}
		used[m.Ext] = true
		var err error
		if t.JSONKey != "" {
			it.Values[i], err = fromJSON(d, m, t.JSONKey, parsed)
		} else {
			it.Values[i], err = fromMember(d, m.Data)
		}
		if err != nil {
			it.Problems = append(it.Problems, Problem{Member: m.Name, Reason: fmt.Sprintf("field %q: %v", d.Name, err), Dropped: true})
		}
	}
	for _, m := range s.Members {
		if !used[m.Ext] && !slices.Contains(w.Ignore, m.Ext) {
			it.Problems = append(it.Problems, Problem{Member: m.Name,
				Reason: fmt.Sprintf("no field takes extension %q (map it to a field, or ignore it)", m.Ext)})
		}
	}
	for _, m := range s.Duplicates {
		it.Problems = append(it.Problems, Problem{Member: m.Name, Reason: fmt.Sprintf("a second %q member in one sample", m.Ext), Dropped: true})
	}
	return it
}

// fromMember makes a field value from a member's bytes.
func fromMember(d field.Desc, b []byte) (field.Value, error) {
	switch d.Type {
	case field.RGBImage, field.Audio:
		return field.Value{Data: b, Encoded: true}, nil
	case field.Text:
		return field.Value{Texts: [][]byte{b}}, nil
	case field.Int:
		x, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil {
			return field.Value{}, fmt.Errorf("not an integer: %q", clip(b))
		}
		return field.Value{Int: x}, nil
	case field.Float:
		x, err := strconv.ParseFloat(string(bytes.TrimSpace(b)), 64)
		if err != nil {
			return field.Value{}, fmt.Errorf("not a number: %q", clip(b))
		}
		return field.Value{Float: x}, nil
	case field.JSON:
		if !json.Valid(b) {
			return field.Value{}, fmt.Errorf("not valid JSON: %q", clip(b))
		}
		return field.Value{Data: bytes.TrimSpace(b)}, nil
	}
	return field.Value{Data: b}, nil // Bytes
}

// fromJSON makes a field value from the value at key in a JSON member.
func fromJSON(d field.Desc, m *webdataset.Member, key string, parsed map[string]any) (field.Value, error) {
	doc, ok := parsed[m.Ext]
	if !ok {
		dec := json.NewDecoder(bytes.NewReader(m.Data))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return field.Value{}, fmt.Errorf("not valid JSON: %v", err)
		}
		parsed[m.Ext] = doc
	}
	v := doc
	for _, k := range strings.Split(key, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return field.Value{}, fmt.Errorf("no key %q (not an object)", key)
		}
		if v, ok = obj[k]; !ok {
			return field.Value{}, fmt.Errorf("no key %q", key)
		}
	}
	switch d.Type {
	case field.Text:
		out, err := jsonCaptions(v)
		if err != nil {
			return field.Value{}, fmt.Errorf("%q %v", key, err)
		}
		return out, nil
	case field.Int, field.Float:
		n, ok := v.(json.Number)
		if !ok {
			return field.Value{}, fmt.Errorf("%q is a %T, not a number", key, v)
		}
		if d.Type == field.Int {
			x, err := n.Int64()
			if err != nil {
				return field.Value{}, fmt.Errorf("%q is %s, not an integer", key, n)
			}
			return field.Value{Int: x}, nil
		}
		x, err := n.Float64()
		return field.Value{Float: x}, err
	case field.JSON:
		b, err := json.Marshal(v)
		return field.Value{Data: b}, err
	case field.Bytes:
		if s, ok := v.(string); ok {
			return field.Value{Data: []byte(s)}, nil
		}
		return field.Value{}, fmt.Errorf("%q is a %T, not a string", key, v)
	}
	return field.Value{}, fmt.Errorf("a %v cannot come from a JSON key", d.Type)
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// jsonCaptions reads a caption value decoded from JSON: a string, or a
// non-empty list of strings. Its errors read after the value's name.
func jsonCaptions(v any) (field.Value, error) {
	switch x := v.(type) {
	case string:
		return field.Value{Texts: [][]byte{[]byte(x)}}, nil
	case []any:
		out := field.Value{}
		for _, c := range x {
			s, ok := c.(string)
			if !ok {
				return field.Value{}, fmt.Errorf("holds a list with a %T, not only strings", c)
			}
			out.Texts = append(out.Texts, []byte(s))
		}
		if len(out.Texts) == 0 {
			return field.Value{}, errors.New("is an empty list of captions")
		}
		return out, nil
	}
	return field.Value{}, fmt.Errorf("is a %T, not a string or a list of strings", v)
}
