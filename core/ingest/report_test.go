package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A shard cut in a member costs a sample: its problem names the sample
// and the member, and the sample counts as skipped.
func TestCutShardCountsItsSample(t *testing.T) {
	dir := t.TempDir()
	whole := tarOf(t, append(sample(t, 0), sample(t, 1)...))
	path := filepath.Join(dir, "cut.tar")
	// Into sample 1's image: sample 0 is whole, sample 1 is lost.
	at := bytes.Index(whole, []byte("000001.jpg")) + 512 + 100
	if err := os.WriteFile(path, whole[:at], 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _, err := convert(t, t.TempDir(), run{shards: []string{path}, opts: Options{Skip: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Samples != 1 || rep.Skipped != 1 || rep.NumProbs != 1 {
		t.Fatalf("%d written, %d skipped, %d problems; want 1, 1, 1: %+v", rep.Samples, rep.Skipped, rep.NumProbs, rep)
	}
	p := rep.Problems[0]
	if p.Source != path || p.Key != "000001" || p.Member == "" || !p.Dropped || strings.Contains(p.Reason, "000001") {
		t.Fatalf("problem %+v, want sample 000001 and its member named once, dropped", p)
	}
}

// Shards that cannot be read at all are shard problems: labelled so,
// naming the shard once, costing no sample of their own.
func TestShardProblems(t *testing.T) {
	dir := t.TempDir()
	in := shards(t, dir, 1)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	noRange := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := os.ReadFile(in[0])
		w.Write(b) // 200 with the whole file, whatever the Range
	}))
	defer noRange.Close()
	for _, tc := range []struct {
		name, shard, want string
		notFound          bool
	}{
		{"missing file", filepath.Join(dir, "missing.tar"), "no such file", true},
		{"HTTP 404", srv.URL + "/missing.tar", "HTTP 404", true},
		{"no Range support", noRange.URL + "/shard.tar", "byte ranges", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := convert(t, t.TempDir(), run{shards: []string{in[0], tc.shard}})
			if !errors.Is(err, ErrShard) || errors.Is(err, ErrBad) || !strings.HasPrefix(err.Error(), "bad shard: ") {
				t.Fatalf("err = %v, want a shard problem", err)
			}
			if n := strings.Count(err.Error(), tc.shard); n != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v: names the shard %d times, want once, and %q", err, n, tc.want)
			}
			if errors.Is(err, fs.ErrNotExist) != tc.notFound {
				t.Fatalf("err = %v: not found %v, want %v", err, !tc.notFound, tc.notFound)
			}
			rep, _, err := convert(t, t.TempDir(), run{shards: []string{in[0], tc.shard}, opts: Options{Skip: true}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Samples != 1 || rep.Skipped != 0 || rep.NumProbs != 1 {
				t.Fatalf("report %+v", rep)
			}
			p := rep.Problems[0]
			if p.Source != tc.shard || p.Key != "" || p.Member != "" || p.Dropped || strings.Contains(p.Reason, tc.shard) {
				t.Fatalf("problem %+v", p)
			}
			b, _ := json.Marshal(p)
			var m map[string]any
			json.Unmarshal(b, &m)
			if v, ok := m["member"]; !ok || v != nil {
				t.Fatalf("JSON %s: want member null", b)
			}
			if v, ok := m["key"]; !ok || v != nil {
				t.Fatalf("JSON %s: want key null", b)
			}
		})
	}
}

// The same problem in many samples is one group with a count and a few
// example samples, beside the problems listed one by one.
func TestProblemsGrouped(t *testing.T) {
	dir := t.TempDir()
	var ms []member
	for g := 0; g < 12; g++ {
		ms = append(ms, sample(t, g)...)
		if g%4 == 0 {
			ms = append(ms, member{fmt.Sprintf("%06d.json", g), []byte(`{"caption": "x"}`)})
		}
	}
	path := filepath.Join(dir, "s.tar")
	os.WriteFile(path, tarOf(t, ms), 0o644)
	// The captions come from JSON: every .txt member is left over, and
	// three samples have no JSON member.
	wds := &WebDataset{Fields: fields(), Take: []Take{{Exts: []string{"jpg"}}, {Exts: []string{"json"}, JSONKey: "caption"}, {Exts: []string{"cls"}}}}
	rep, _, err := convert(t, t.TempDir(), run{shards: []string{path}, wds: wds, opts: Options{Skip: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.NumProbs != 12+9 || len(rep.Problems) != 21 {
		t.Fatalf("%d problems, want 21", rep.NumProbs)
	}
	if len(rep.Groups) != 2 {
		t.Fatalf("groups %+v, want 2", rep.Groups)
	}
	txt, missing := rep.Groups[0], rep.Groups[1]
	if txt.Count != 12 || txt.Dropped || !strings.Contains(txt.Reason, `no field takes extension "txt"`) ||
		len(txt.Examples) != MaxExamples || txt.Examples[0].Key != "000000" || txt.Examples[0].Member != "000000.txt" {
		t.Fatalf("group %+v", txt)
	}
	if missing.Count != 9 || !missing.Dropped || !strings.Contains(missing.Reason, "no json member") || missing.Examples[0].Key != "000001" {
		t.Fatalf("group %+v", missing)
	}
}
