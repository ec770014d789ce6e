package mixture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/dataset"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
)

// blob is the heap value of sample g (a global number across all files).
func blob(g, size int) []byte {
	b := make([]byte, size+(g*997)%size)
	for k := range b {
		b[k] = byte(g*7 + k/101)
	}
	return b
}

// write writes samples [first, first+n) to path with fields named by
// names: a Bytes field (blob), an Int (g), an NDArray <f4 [2] (g, -g), and
// extra fields of names[3:] (Float g/2) when given.
func write(t *testing.T, path string, names []string, first, n, size int, pageSize uint64) string {
	t.Helper()
	descs := []field.Desc{{Type: field.Bytes, Name: names[0]}, {Type: field.Int, Name: names[1]},
		{Type: field.NDArray, Name: names[2], DType: "<f4", Shape: []uint64{2}}}
	for _, n := range names[3:] {
		descs = append(descs, field.Desc{Type: field.Float, Name: n})
	}
	opts := beton.WriterOptions{PageSize: pageSize, Workers: 1}
	return betontest.WriteFile(t, path, descs, betontest.Encoders(t, descs), opts, n, func(i int) []field.Value {
		g := first + i
		arr := make([]byte, 8)
		binary.LittleEndian.PutUint32(arr, uint32(g))
		binary.LittleEndian.PutUint32(arr[4:], uint32(-g))
		row := []field.Value{{Data: blob(g, size)}, {Int: int64(g)}, {Data: arr}}
		for range names[3:] {
			row = append(row, field.Value{Float: float64(g) / 2})
		}
		return row
	})
}

var std = []string{"blob", "label", "arr"}

// TestOpen: three sources (one file; two shards by glob with other field
// names, renamed; a file with an extra field, dropped, and larger pages)
// read as one dataset: fields in the first source's order plus the source
// field, every sample's bytes as written, parts in order.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	a := write(t, filepath.Join(dir, "a.beton"), std, 0, 5, 3000, beton.MinPageSize)
	write(t, filepath.Join(dir, "b-0.beton"), []string{"data", "target", "arr"}, 5, 4, 3000, beton.MinPageSize)
	write(t, filepath.Join(dir, "b-1.beton"), []string{"data", "target", "arr"}, 9, 3, 300_000, beton.MinPageSize)
	c := write(t, filepath.Join(dir, "c.beton"), []string{"blob", "label", "arr", "score"}, 12, 6, 3000, 2*beton.MinPageSize)
	spec := Spec{Sources: []Source{
		{Name: "curated", Paths: []string{a}, Repeat: f(2)},
		{Paths: []string{filepath.Join(dir, "b-*.beton")}, Rename: map[string]string{"data": "blob", "target": "label"}},
		{Paths: []string{c}, Drop: []string{"score"}, Choose: i(4)},
	}, SourceField: "source"}
	m, err := Open(spec, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := m.Reader
	var names []string
	for _, d := range r.Fields {
		names = append(names, d.Name)
	}
	if got := strings.Join(names, ","); got != "blob,label,arr,source" {
		t.Fatalf("fields %s", got)
	}
	if r.NumSamples() != 18 || r.PageSize() != 2*beton.MinPageSize || !r.Mapped() {
		t.Fatalf("%d samples, page size %d, mapped %v", r.NumSamples(), r.PageSize(), r.Mapped())
	}
	want := []Part{{Name: "curated"}, {Name: filepath.Join(dir, "b-*.beton")}, {Name: c}}
	want[0].Start, want[0].Size, want[0].Take = 0, 5, 10
	want[1].Start, want[1].Size, want[1].Take = 5, 7, 7
	want[2].Start, want[2].Size, want[2].Take = 12, 6, 4
	for k, p := range m.Parts {
		if p.Name != want[k].Name || p.Part != want[k].Part {
			t.Errorf("part %d: %+v, want %+v", k, p, want[k])
		}
	}
	if len(m.Parts[1].Files) != 2 {
		t.Errorf("source 1's files: %v", m.Parts[1].Files)
	}
	for g := range 18 {
		id := uint64(g)
		size := 3000
		if g >= 9 && g < 12 {
			size = 300_000
		}
		_, heap, err := r.Read(id, 0)
		if err != nil || !bytes.Equal(heap, blob(g, size)) {
			t.Fatalf("sample %d blob: %v", g, err)
		}
		col, _, _ := r.Read(id, 1)
		_, arr, _ := r.Read(id, 2)
		src, _, _ := r.Read(id, 3)
		if got := binary.LittleEndian.Uint64(col); got != uint64(g) {
			t.Fatalf("sample %d label %d", g, got)
		}
		if got := binary.LittleEndian.Uint32(arr); got != uint32(g) {
			t.Fatalf("sample %d arr %d", g, got)
		}
		want := 0
		if g >= 12 {
			want = 2
		} else if g >= 5 {
			want = 1
		}
		if got := int(binary.LittleEndian.Uint64(src)); got != want || m.SourceOf(id) != want {
			t.Fatalf("sample %d: source field %d, SourceOf %d, want %d", g, got, m.SourceOf(id), want)
		}
	}
}

// TestOpenSide: a source of weight 0 between two others is a side source:
// left out of the joined reader (sample ids, fields and epochs are the
// others'), its fields its own (renamed and dropped, not fitted to the
// others'), its files joined into a reader of its own; the source field
// keeps every source's place in the spec.
func TestOpenSide(t *testing.T) {
	dir := t.TempDir()
	a := write(t, filepath.Join(dir, "a.beton"), std, 0, 5, 300, beton.MinPageSize)
	write(t, filepath.Join(dir, "n-0.beton"), []string{"clip", "n", "arr", "extra"}, 100, 3, 300, beton.MinPageSize)
	write(t, filepath.Join(dir, "n-1.beton"), []string{"clip", "n", "arr", "extra"}, 103, 2, 300, 2*beton.MinPageSize)
	c := write(t, filepath.Join(dir, "c.beton"), std, 5, 4, 300, beton.MinPageSize)
	for _, zero := range []Source{{Proportion: f(0)}, {Repeat: f(0)}, {Choose: i(0)}} {
		noise := zero
		noise.Name, noise.Paths = "noise", []string{filepath.Join(dir, "n-*.beton")}
		noise.Rename, noise.Drop = map[string]string{"clip": "noise"}, []string{"extra"}
		spec := Spec{Sources: []Source{{Name: "a", Paths: []string{a}}, noise, {Name: "c", Paths: []string{c}}},
			SourceField: "source"}
		m, err := Open(spec, dataset.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if r := m.Reader; r.NumSamples() != 9 || len(r.Fields) != 4 {
			t.Fatalf("joined: %d samples, %d fields", r.NumSamples(), len(r.Fields))
		}
		if len(m.Parts) != 2 || m.Parts[1].Name != "c" || m.Parts[1].Start != 5 || m.Parts[1].Take != 4 ||
			fmt.Sprint(m.Index) != "[0 2]" {
			t.Fatalf("parts %+v, index %v", m.Parts, m.Index)
		}
		if len(m.Side) != 1 || m.Side[0].Name != "noise" || m.Side[0].Index != 1 || len(m.Side[0].Files) != 2 {
			t.Fatalf("side %+v", m.Side)
		}
		sr := m.Side[0].Reader
		if sr.NumSamples() != 5 || sr.FieldIndex("noise") != 0 || sr.FieldIndex("extra") >= 0 || len(sr.Fields) != 3 {
			t.Fatalf("side reader: %d samples, fields %v", sr.NumSamples(), sr.Fields)
		}
		for g := range 5 {
			if _, heap, err := sr.Read(uint64(g), 0); err != nil || !bytes.Equal(heap, blob(100+g, 300)) {
				t.Fatalf("side sample %d: %v", g, err)
			}
		}
		if src, _, _ := m.Reader.Read(6, 3); binary.LittleEndian.Uint64(src) != 2 {
			t.Fatalf("sample 6's source field %d, want 2 (its place in the spec)", binary.LittleEndian.Uint64(src))
		}
	}
}

// TestOpenRefuses: sources that cannot be fitted together fail with an
// error naming the source and the field or file; nothing stays open.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	a := write(t, filepath.Join(dir, "a.beton"), std, 0, 3, 100, beton.MinPageSize)
	other := write(t, filepath.Join(dir, "other.beton"), []string{"blob", "target", "arr"}, 0, 3, 100, beton.MinPageSize)
	extra := write(t, filepath.Join(dir, "extra.beton"), []string{"blob", "label", "arr", "score"}, 0, 3, 100, beton.MinPageSize)
	empty := write(t, filepath.Join(dir, "empty.beton"), std, 0, 0, 100, beton.MinPageSize)
	float := filepath.Join(dir, "float.beton")
	{
		descs := []field.Desc{{Type: field.Bytes, Name: "blob"}, {Type: field.Float, Name: "label"},
			{Type: field.NDArray, Name: "arr", DType: "<f4", Shape: []uint64{2}}}
		betontest.WriteFile(t, float, descs, betontest.Encoders(t, descs), beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 1}, 1,
			func(int) []field.Value { return []field.Value{{Data: []byte{1}}, {Float: 1}, {Data: make([]byte, 8)}} })
	}
	os.MkdirAll(filepath.Join(dir, "mixed"), 0o755)
	write(t, filepath.Join(dir, "mixed", "0.beton"), std, 0, 2, 100, beton.MinPageSize)
	write(t, filepath.Join(dir, "mixed", "1.beton"), []string{"blob", "target", "arr"}, 0, 2, 100, beton.MinPageSize)

	src := func(name string, paths ...string) Source { return Source{Name: name, Paths: paths} }
	cases := []struct {
		name    string
		spec    Spec
		want    string
		notFind bool
	}{
		{"missing field", Spec{Sources: []Source{src("a", a), src("b", other)}},
			`source 1 (b) has no field "label" (its fields: blob, target, arr), which source 0 (a) has: rename one of its fields to "label"`, false},
		{"extra field", Spec{Sources: []Source{src("a", a), src("x", extra)}},
			`source 1 (x) has a field "score", which source 0 (a) does not have`, false},
		{"kind", Spec{Sources: []Source{src("a", a), src("f", float)}},
			`field "label" is FloatField in source 1 (f), IntField in source 0 (a)`, false},
		{"renamed kind", Spec{Sources: []Source{src("a", a), {Name: "f", Paths: []string{float}, Rename: map[string]string{"label": "lbl"}}}}, `source 1 (f) has no field "label"`, false},
		{"kind of a renamed array", Spec{Sources: []Source{{Name: "a", Paths: []string{a}, Drop: []string{"arr"}},
			{Name: "f", Paths: []string{float}, Rename: map[string]string{"arr": "label"}, Drop: []string{"label"}}}},
			`field "label" is NDArrayField <f4 [2] (stored as "arr") in source 1 (f), IntField in source 0 (a)`, false},
		{"rename unknown", Spec{Sources: []Source{src("a", a), {Name: "b", Paths: []string{other}, Rename: map[string]string{"labl": "label"}}}},
			`source 1 (b): rename names "labl", which is not one of its fields (blob, target, arr)`, false},
		{"drop unknown", Spec{Sources: []Source{{Name: "a", Paths: []string{a}, Drop: []string{"x"}}}},
			`source 0 (a): drop names "x"`, false},
		{"rename collision", Spec{Sources: []Source{{Name: "a", Paths: []string{a}, Rename: map[string]string{"label": "blob"}}}},
			`two fields would be named "blob"`, false},
		{"source field collision", Spec{Sources: []Source{src("a", a)}, SourceField: "label"},
			`source_field "label" is also a field`, false},
		{"files of a source differ", Spec{Sources: []Source{src("a", a), src("m", filepath.Join(dir, "mixed"))}},
			`source 1 (m): its files differ: ` + filepath.Join(dir, "mixed", "1.beton") + `: field 1 is "target"`, false},
		{"no samples", Spec{Sources: []Source{src("a", a), src("e", empty)}}, `source 1 (e) has no samples`, false},
		{"side source with no samples", Spec{Sources: []Source{src("a", a), {Name: "e", Paths: []string{empty}, Proportion: f(0)}}}, `source 1 (e) has no samples`, false},
		{"side source's files differ", Spec{Sources: []Source{src("a", a), {Name: "m", Paths: []string{filepath.Join(dir, "mixed")}, Choose: i(0)}}},
			`source 1 (m): its files differ`, false},
		{"side source's drop", Spec{Sources: []Source{src("a", a), {Name: "n", Paths: []string{a}, Choose: i(0), Drop: []string{"x"}}}},
			`source 1 (n): drop names "x"`, false},
		{"only side sources", Spec{Sources: []Source{{Name: "n", Paths: []string{a}, Choose: i(0)}}}, `every source has weight 0`, false},
		{"missing shard", Spec{Sources: []Source{src("a", a), src("gone", filepath.Join(dir, "gone.beton"))}},
			`source 1 (gone): open ` + filepath.Join(dir, "gone.beton"), true},
		{"glob matching nothing", Spec{Sources: []Source{src("a", a), {Paths: []string{filepath.Join(dir, "web-*.beton")}}}},
			`source 1 (` + filepath.Join(dir, "web-*.beton") + `): ` + filepath.Join(dir, "web-*.beton") + `: file does not exist: the pattern matches no file`, true},
		{"no sources", Spec{}, "no sources", false},
		{"bad weight before opening", Spec{Sources: []Source{{Name: "a", Paths: []string{filepath.Join(dir, "gone.beton")}, Repeat: f(-1)}}},
			"repeat -1 must be a positive number", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Open(c.spec, dataset.Options{})
			if err == nil {
				m.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %q", err, c.want)
			}
			if c.notFind != errors.Is(err, fs.ErrNotExist) || (!c.notFind && !errors.Is(err, ErrMixture)) {
				t.Fatalf("error class: %v (ErrNotExist %v, ErrMixture %v)", err, errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrMixture))
			}
		})
	}
}

// ExampleTakes shows Streaming's and litdata's weights side by side.
func ExampleTakes() {
	sizes := []uint64{1000, 500, 200}
	streaming := Spec{Sources: []Source{{Proportion: f(0.6)}, {Proportion: f(0.3)}, {Proportion: f(0.1)}}}
	litdata := Spec{Sources: make([]Source, 3), Weights: []float64{6, 3, 1}}
	for _, s := range []Spec{streaming, litdata} {
		takes, _ := Takes(s, sizes)
		fmt.Println(takes)
	}
	// Output:
	// [1020 510 170]
	// [1020 510 170]
}
