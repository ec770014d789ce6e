package beton

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// TestJoinWith: shards whose fields come in another order and under other
// names, with a field left out and pages of two sizes, read as one
// dataset with the picked fields, the tag, and every sample's bytes.
func TestJoinWith(t *testing.T) {
	dir := t.TempDir()
	reordered := []field.Desc{shardFields[2], {Type: field.Int, Name: "y"}, {Type: field.Float, Name: "extra"},
		{Type: field.Bytes, Name: "data"}}
	a := writeRows(t, filepath.Join(dir, "a.beton"), shardFields, 0, 6, 3000, MinPageSize)
	b := filepath.Join(dir, "b.beton")
	{
		encs := make([]field.Encoder, len(reordered))
		for k, d := range reordered {
			encs[k], _ = field.NewEncoder(d)
		}
		w, err := Create(b, reordered, encs, 5, WriterOptions{PageSize: 2 * MinPageSize, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			row := rowOf(6+i, 300_000)
			if err := w.Put(uint64(i), []field.Value{row[2], row[1], {Float: 0.5}, row[0]}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ra, err := Open(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Open(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := JoinWith("mix", []*Reader{ra, rb}, JoinOptions{
		Fields: [][]int{{0, 1, 2}, {3, 1, 0}}, Names: []string{"blob", "label", "arr"},
		Tag: "src", Tags: []int64{7, -2}, MixedPageSizes: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.PageSize() != 2*MinPageSize || r.NumSamples() != 11 || len(r.Fields) != 4 || r.Fields[3].Name != "src" ||
		r.Fields[3].Type != field.Int || r.Header.NumFields != 4 {
		t.Fatalf("page size %d, %d samples, fields %+v", r.PageSize(), r.NumSamples(), r.Fields)
	}
	for g := range 11 {
		size := 3000
		if g >= 6 {
			size = 300_000
		}
		want := rowOf(g, size)
		for f, w := range want {
			col, heap, err := r.Read(uint64(g), f)
			if err != nil {
				t.Fatalf("sample %d field %d: %v", g, f, err)
			}
			if w.Data != nil && !bytes.Equal(heap, w.Data) || w.Data == nil && int64(binary.LittleEndian.Uint64(col)) != w.Int {
				t.Fatalf("sample %d field %d: wrong value", g, f)
			}
		}
		col, _, _ := r.Read(uint64(g), 3)
		if tag, want := int64(binary.LittleEndian.Uint64(col)), map[bool]int64{true: 7, false: -2}[g < 6]; tag != want {
			t.Fatalf("sample %d: tag %d, want %d", g, tag, want)
		}
	}
	for p := uint64(0); p < r.Header.AllocTablePtr/r.PageSize(); p++ {
		if start, end, err := r.PageRange(p); err == nil && end-start > r.PageSize() {
			t.Fatalf("page %d: [%d, %d)", p, start, end)
		}
	}
}

// TestJoinWithRefuses: picked fields that differ in kind, names that
// repeat, a tag named as a field, page sizes that differ when not allowed.
func TestJoinWithRefuses(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, ps uint64) *Reader {
		r, err := Open(writeRows(t, filepath.Join(dir, name), shardFields, 0, 3, 100, ps), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	a, b, big := open("a.beton", MinPageSize), open("b.beton", MinPageSize), open("big.beton", 2*MinPageSize)
	cases := []struct {
		name   string
		shards []*Reader
		opts   JoinOptions
		want   string
	}{
		{"kinds", []*Reader{a, b}, JoinOptions{Fields: [][]int{{0, 1}, {0, 2}}}, `b.beton: field "label" is "arr" (NDArrayField <f4 [3]), ` + a.Path + ` has "label" (IntField)`},
		{"names repeat", []*Reader{a}, JoinOptions{Fields: [][]int{{0, 1}}, Names: []string{"x", "x"}}, `two fields named "x"`},
		{"tag is a field", []*Reader{a}, JoinOptions{Tag: "label", Tags: []int64{0}}, `the tag field "label"`},
		{"tags count", []*Reader{a, b}, JoinOptions{Tag: "src", Tags: []int64{0}}, `1 tags for 2 shards`},
		{"picks count", []*Reader{a, b}, JoinOptions{Fields: [][]int{{0}}}, `fields picked for 1 shards`},
		{"pick out of range", []*Reader{a}, JoinOptions{Fields: [][]int{{5}}}, `no field 5`},
		{"page sizes", []*Reader{a, big}, JoinOptions{}, `page size 4194304`},
	}
	for _, c := range cases {
		if _, err := JoinWith("mix", c.shards, c.opts); !errors.Is(err, ErrShards) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
