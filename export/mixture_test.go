package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestMixtureThroughABI: a mixture of the scalars fixture with itself,
// 0.75 / 0.25 of an epoch of 200 samples, opened through the ABI and
// loaded through its reader handle: its sources described, every epoch the
// exact takes, the info's sample counts, the stats by source.
func TestMixtureThroughABI(t *testing.T) {
	base := testLive()
	spec := fmt.Sprintf(`{"sources": [{"name": "a", "paths": [%q], "proportion": 0.75},
		{"name": "b", "paths": [%q], "proportion": 0.25}], "epoch_size": 200, "source_field": "src"}`, scalars, scalars)
	out, m := testMixtureOpen(spec)
	if m.ret <= 0 {
		t.Fatal(m.err())
	}
	var info struct {
		Sources []sourceInfo `json:"sources"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	want := []sourceInfo{{Name: "a", Files: []string{scalars}, Start: 0, Size: 257, Take: 150},
		{Name: "b", Files: []string{scalars}, Start: 257, Size: 257, Take: 50}}
	for k, s := range info.Sources {
		w := want[k]
		if s.Name != w.Name || s.Start != w.Start || s.Size != w.Size || s.Take != w.Take || s.Files[0] != w.Files[0] ||
			s.EndPage <= s.FirstPage || (k > 0 && s.FirstPage < info.Sources[k-1].EndPage) {
			t.Fatalf("source %d: %+v, want %+v", k, s, w)
		}
	}
	l := testLoaderCreate(fmt.Sprintf(`{"reader": %d, "batch_size": 16, "num_workers": 2, "order": "random", "seed": 3,
		"world": 1, "outputs": [{"field": 2, "ops": [{"op": "int"}]}]}`, m.ret))
	testClose(m.ret) // the loader holds the reader
	if l.ret <= 0 {
		t.Fatal(l.err())
	}
	js, r := testJSON(ffcv_loader_info, l.ret)
	if r.ret < 0 || !strings.Contains(js, `"samples":200`) || !strings.Contains(js, `"global_samples":200`) {
		t.Fatalf("loader info %s (%v)", js, r.err())
	}
	it := testLoaderStart(l.ret, 0)
	if it.ret <= 0 {
		t.Fatal(it.err())
	}
	perSource := map[uint64]int{}
	for {
		ts, r := testIterNext(it.ret, 2)
		if r.ret < 0 {
			t.Fatal(r.err())
		}
		if r.ret == 0 {
			break
		}
		src, ids := ts[0].bytes(), ts[1].bytes()
		for k := range len(ids) / 8 {
			s, id := binary.LittleEndian.Uint64(src[8*k:]), binary.LittleEndian.Uint64(ids[8*k:])
			if s != map[bool]uint64{true: 0, false: 1}[id < 257] {
				t.Fatalf("sample %d: source field %d", id, s)
			}
			perSource[s]++
		}
		for _, x := range ts {
			x.free()
		}
	}
	testClose(it.ret)
	if perSource[0] != 150 || perSource[1] != 50 {
		t.Fatalf("samples by source %v", perSource)
	}
	js, _ = testJSON(ffcv_loader_stats, l.ret)
	if !strings.Contains(js, `"sources":[{"samples":150,`) {
		t.Fatalf("stats %s", js)
	}
	testClose(l.ret)
	waitLive(t, base)
}

// TestMixtureOpenErrors: each kind of bad mixture comes back as its error
// class with a message naming the source.
func TestMixtureOpenErrors(t *testing.T) {
	arrays := filepath.Join("..", "tests", "fixtures", "ffcv-1.0", "arrays.beton")
	gone := filepath.Join(t.TempDir(), "gone.beton")
	cases := []struct {
		name string
		spec string
		code int64
		msg  string
	}{
		{"missing file", fmt.Sprintf(`{"sources": [{"paths": [%q]}, {"name": "web", "paths": [%q]}]}`, scalars, gone),
			codeNotFound, "source 1 (web): open " + gone},
		{"weights", fmt.Sprintf(`{"sources": [{"paths": [%q]}], "weights": [-1]}`, scalars), codeArgument, "weight -1 of source 0"},
		{"fields", fmt.Sprintf(`{"sources": [{"name": "s", "paths": [%q]}, {"name": "a", "paths": [%q]}]}`, scalars, arrays),
			codeArgument, "source 1 (a) has no field"},
		{"unknown key", fmt.Sprintf(`{"sources": [{"paths": [%q], "weight": 1}]}`, scalars), codeArgument, `unknown field "weight"`},
		{"null spec", "", codeArgument, "spec"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, r := testMixtureOpen(c.spec)
			if r.ret != c.code || !strings.Contains(r.msg, c.msg) {
				t.Fatalf("got %d %q, want %d with %q", r.ret, r.msg, c.code, c.msg)
			}
		})
	}
}
