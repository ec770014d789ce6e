package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
)

// arrowSpec is an Arrow job of fields (caption: TextField, label: IntField,
// score: FloatField) writing one file at path.
func arrowSpec(path string, sources int, extra string) string {
	names, _ := json.Marshal(make([]string, sources))
	return fmt.Sprintf(`{"sources": %s, "fields": [{"name": "caption", "type_id": 102%s}, {"name": "label", "type_id": 1},
		{"name": "score", "type_id": 0}], "output": {"prefix": %q, "width": -1}, "page_size": 2097152, "num_workers": 2, "skip": true}`,
		names, extra, path)
}

// strings32 is a binary column of ss with int32 offsets.
func strings32(ss ...string) testColumn {
	c := testColumn{kind: 0, offsets: []int64{0}}
	for _, s := range ss {
		c.data = append(c.data, s...)
		c.offsets = append(c.offsets, int64(len(c.data)))
	}
	return c
}

func readCaptions(t *testing.T, path string) []string {
	t.Helper()
	r, err := beton.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for i := uint64(0); i < r.NumSamples(); i++ {
		col, heap, err := r.Read(i, 0)
		if err != nil {
			t.Fatal(err)
		}
		m := field.ParseTextMeta(col)
		var caps []string
		for k := 0; k < m.Captions; k++ {
			c, _ := field.TextCaption(m, heap, k)
			s := string(c.Text)
			if c.NumTokens() > 0 {
				var ids []uint32
				for j := 0; j < c.NumTokens(); j++ {
					ids = append(ids, c.Token(j))
				}
				s += fmt.Sprint(ids)
			}
			caps = append(caps, s)
		}
		lcol, _, _ := r.Read(i, 1)
		out = append(out, fmt.Sprintf("%s|%d", strings.Join(caps, ";"), int64(lcol[0])|int64(lcol[1])<<8))
	}
	return out
}

// Arrow columns of every supported layout become the samples they hold;
// null values are problems naming the row.
func TestIngestArrowColumns(t *testing.T) {
	nums := testColumn{kind: 2, int64s: []int64{7, 8, 9, 10, 11}}
	floats := testColumn{kind: 3, int64s: []int64{0, 0, 0, 0, 0}}
	for _, tc := range []struct {
		name     string
		caption  testColumn
		labels   testColumn
		rows     uint64
		keys     *testColumn
		want     string
		problems string
	}{
		{"strings", strings32("a", "bb", "", "ccc"), nums, 4, nil, "[a|7 bb|8 |9 ccc|10]", ""},
		{"large strings", testColumn{kind: 1, offsets: []int64{0, 1, 3}, data: []byte("xyz")}, nums, 2, nil, "[x|7 yz|8]", ""},
		{"sliced", func() testColumn { c := strings32("a", "bb", "ccc"); c.offset = 1; return c }(),
			func() testColumn { c := nums; c.offset = 2; return c }(), 2, nil, "[bb|9 ccc|10]", ""},
		{"null caption", func() testColumn { c := strings32("a", "b", "c"); c.validity = []byte{0b101}; return c }(), nums, 3,
			nil, "[a|7 c|9]", `"key":"row 1","member":null,"reason":"field \"caption\": no caption`},
		{"null label, keyed", strings32("a", "b", "c"), func() testColumn { c := nums; c.validity = []byte{0b011}; return c }(), 3,
			&testColumn{kind: 0, offsets: []int64{0, 2, 4, 6}, data: []byte("k0k1k2")}, "[a|7 b|8]", `"key":"k2","member":null,"reason":"field \"label\": null"`},
		{"lists", testColumn{kind: 0, list: 32, listOffsets: []int64{0, 2, 3, 5}, offsets: []int64{0, 1, 2, 3, 4, 5}, data: []byte("abcde")},
			nums, 3, nil, "[a;b|7 c|8 d;e|9]", ""},
		{"large lists, values offset", testColumn{kind: 0, list: 64, listOffsets: []int64{1, 2, 4}, valuesOffset: 1,
			offsets: []int64{0, 1, 2, 3, 4, 5, 6}, data: []byte("uvwxyz")}, nums, 2, nil, "[w|7 x;y|8]", ""},
		{"null in a list", testColumn{kind: 0, list: 32, listOffsets: []int64{0, 2, 3}, valuesValidity: []byte{0b101},
			offsets: []int64{0, 1, 2, 3}, data: []byte("abc")}, nums, 2, nil, "[c|8]", "a null caption"},
		{"empty list", testColumn{kind: 0, list: 32, listOffsets: []int64{0, 0, 1}, offsets: []int64{0, 1}, data: []byte("a")},
			nums, 2, nil, "[a|8]", "an empty list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.beton")
			h := testIngest(arrowSpec(path, 1, ""), false)
			if h.ret <= 0 {
				t.Fatal(h.err())
			}
			defer testClose(h.ret)
			fl := floats
			fl.int64s = fl.int64s[:len(tc.labels.int64s)]
			if r := testPush(h.ret, 0, tc.rows, []testColumn{tc.caption, tc.labels, fl}, tc.keys); r.ret < 0 {
				t.Fatal(r.err())
			}
			if r := testIngestEnd(h.ret, 0); r.ret < 0 {
				t.Fatal(r.err())
			}
			rep, _, r := testIngestWait(h.ret, 10_000)
			if r.ret != 1 {
				t.Fatalf("wait: %d %v", r.ret, r.err())
			}
			if got := fmt.Sprint(readCaptions(t, path)); got != tc.want {
				t.Fatalf("samples %s, want %s", got, tc.want)
			}
			if tc.problems == "" && strings.Contains(rep, `"reason"`) || !strings.Contains(rep, tc.problems) {
				t.Fatalf("report %s, want problems %q", rep, tc.problems)
			}
		})
	}
}

// Columns that cannot be read are argument errors, the job left to abort.
func TestIngestArrowRefuses(t *testing.T) {
	good := []testColumn{strings32("a"), {kind: 2, int64s: []int64{1}}, {kind: 3, int64s: []int64{0}}}
	for _, tc := range []struct {
		name string
		cols []testColumn
		rows uint64
		want string
	}{
		{"numbers for text", []testColumn{good[1], good[1], good[2]}, 1, "takes a string column"},
		{"text for a number", []testColumn{good[0], good[0], good[2]}, 1, "int64 or float64 column"},
		{"floats for ints", []testColumn{good[0], good[2], good[2]}, 1, "int64 or float64 column"},
		{"offsets past the data", []testColumn{{kind: 0, offsets: []int64{0, 9}, data: []byte("ab")}, good[1], good[2]}, 1, "spans bytes"},
		{"too few columns", good[:2], 1, "2 columns for 3 fields"},
		{"values past the data", []testColumn{strings32("a", "b", "c"), {kind: 2, int64s: []int64{1}}, good[2]}, 3, "past the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testIngest(arrowSpec(filepath.Join(t.TempDir(), "out.beton"), 1, ""), false)
			defer testClose(h.ret)
			if r := testPush(h.ret, 0, tc.rows, tc.cols, nil); r.ret != codeArgument || !strings.Contains(r.msg, tc.want) {
				t.Fatalf("push: %d %q, want an argument error with %q", r.ret, r.msg, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name, spec string
		webdataset bool
		want       string
	}{
		{"unknown key", `{"sources": ["a"], "fields": [{"name": "x", "type_id": 1}], "output": {"prefix": "x", "width": -1}, "bogus": 1}`, false, "unknown field"},
		{"bad split", `{"sources": ["a"], "fields": [{"name": "x", "type_id": 1}], "output": {"prefix": "x", "width": 2}, "split": "rows"}`, false, "split"},
		{"several files, one name", `{"sources": ["a"], "fields": [{"name": "x", "type_id": 1}], "output": {"prefix": "x", "width": -1}, "split": "shard"}`, false, "numbered"},
		{"shards for an arrow job", `{"shards": ["a.tar"], "fields": [{"name": "x", "type_id": 1}], "output": {"prefix": "x", "width": -1}}`, false, "sources"},
		{"array field", `{"sources": ["a"], "fields": [{"name": "x", "type_id": 4, "shape": [2], "dtype": "<f4"}], "output": {"prefix": "x", "width": -1}}`, false, "cannot come from an Arrow column"},
		{"no take", `{"shards": ["a.tar"], "fields": [{"name": "x", "type_id": 1}], "output": {"prefix": "x", "width": -1}}`, true, "member mappings"},
		{"image from JSON", `{"shards": ["a.tar"], "fields": [{"name": "x", "type_id": 2, "write_mode": "jpg", "jpeg_quality": 90}], "take": [{"exts": ["json"], "json_key": "a"}], "output": {"prefix": "x", "width": -1}}`, true, "not a JSON key"},
		{"tokens of an int", `{"sources": ["a"], "fields": [{"name": "x", "type_id": 1}], "tokenize": [0], "output": {"prefix": "x", "width": -1}}`, false, "not a TextField"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := testIngest(tc.spec, tc.webdataset); r.ret != codeArgument || !strings.Contains(r.msg, tc.want) {
				if r.ret > 0 {
					testClose(r.ret)
				}
				t.Fatalf("%d %q, want an argument error with %q", r.ret, r.msg, tc.want)
			}
		})
	}
}

// TestIngestColumns converts the MDS fixture that MosaicML Streaming wrote
// and refuses specs that cannot work, as argument errors, or a missing
// dataset as a missing file.
func TestIngestColumns(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("..", "tests", "fixtures", "peers"))
	out := filepath.Join(t.TempDir(), "out.beton")
	spec := func(format, dir, extra string) string {
		return fmt.Sprintf(`{"format": %q, "root": %q, "columns": ["label"], "fields": [{"name": "y", "type_id": 1}],
			"output": {"prefix": %q, "width": -1}%s}`, format, filepath.Join(root, dir), out, extra)
	}
	h := testIngestColumns(spec("mds", "mds-zstd", ""))
	if h.ret <= 0 {
		t.Fatalf("%d %q", h.ret, h.msg)
	}
	defer testClose(h.ret)
	rep, _, r := testIngestWait(h.ret, 10_000)
	if r.ret != 1 || !strings.Contains(rep, `"samples":7`) {
		t.Fatalf("wait: %d %v, report %s", r.ret, r.err(), rep)
	}
	for _, tc := range []struct {
		name, spec string
		code       int64
		want       string
	}{
		{"format", spec("tfrecord", "mds", ""), codeArgument, `format "tfrecord" must be 'mds' or 'litdata'`},
		{"shards", spec("mds", "mds", `, "shards": ["a.tar"]`), codeArgument, `read from "root"`},
		{"columns", spec("mds", "mds", `, "columns": []`), codeArgument, "0 columns for 1 fields"},
		{"an index of the other format", spec("litdata", "mds", ""), codeArgument, "not a litdata index"},
		{"no dataset", spec("mds", "nothing", ""), codeNotFound, "an MDS dataset's index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := testIngestColumns(tc.spec); r.ret != tc.code || !strings.Contains(r.msg, tc.want) {
				if r.ret > 0 {
					testClose(r.ret)
				}
				t.Fatalf("%d %q, want %d with %q", r.ret, r.msg, tc.code, tc.want)
			}
		})
	}
}

// Pushes and ends name one of the sources of a job that takes pushed
// samples: a webdataset job reads its shards itself.
func TestIngestPushRefuses(t *testing.T) {
	dir := t.TempDir()
	arrow := testIngest(arrowSpec(filepath.Join(dir, "arrow.beton"), 2, ""), false)
	if arrow.ret <= 0 {
		t.Fatal(arrow.err())
	}
	defer testClose(arrow.ret)
	shard := filepath.Join(dir, "empty.tar")
	if err := os.WriteFile(shard, make([]byte, 1024), 0o644); err != nil { // a tar of no members
		t.Fatal(err)
	}
	wds := testIngest(fmt.Sprintf(`{"shards": [%q], "fields": [{"name": "x", "type_id": 1}], "take": [{"exts": ["cls"]}],
		"output": {"prefix": %q, "width": -1}}`, shard, filepath.Join(dir, "wds.beton")), true)
	if wds.ret <= 0 {
		t.Fatal(wds.err())
	}
	defer testClose(wds.ret)
	labels := testColumn{kind: 2, int64s: []int64{1}}
	cols := []testColumn{strings32("a"), labels, {kind: 3, int64s: []int64{0}}}
	for _, tc := range []struct {
		name string
		call func() cResult
		want string
	}{
		{"push past the sources", func() cResult { return testPush(arrow.ret, 2, 1, cols, nil) }, "source 2 of 2"},
		{"push before the sources", func() cResult { return testPush(arrow.ret, -1, 1, cols, nil) }, "source -1 of 2"},
		{"end past the sources", func() cResult { return testIngestEnd(arrow.ret, 2) }, "source 2 of 2"},
		{"push to a webdataset job", func() cResult { return testPush(wds.ret, 0, 1, []testColumn{labels}, nil) }, "reads webdataset shards itself"},
		{"end of a webdataset job", func() cResult { return testIngestEnd(wds.ret, 0) }, "reads webdataset shards itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := tc.call(); r.ret != codeArgument || !strings.Contains(r.msg, tc.want) {
				t.Fatalf("%d %q, want an argument error with %q", r.ret, r.msg, tc.want)
			}
		})
	}
}

// Captions go out to the caller's tokenizer and their tokens come back,
// also tokens pushed with the columns; calls out of turn are refused.
func TestIngestTokens(t *testing.T) {
	args := `, "text": {"tokens": true, "vocab_size": 100, "sot": 98, "eot": 99}`
	// Tokens through ffcv_ingest_texts / ffcv_ingest_tokens.
	path := filepath.Join(t.TempDir(), "out.beton")
	spec := strings.Replace(arrowSpec(path, 2, args), `"skip": true`, `"skip": true, "tokenize": [0], "text_batch": 2`, 1)
	h := testIngest(spec, false)
	if h.ret <= 0 {
		t.Fatal(h.err())
	}
	defer testClose(h.ret)
	labels := testColumn{kind: 2, int64s: []int64{1, 2, 3}}
	floats := testColumn{kind: 3, int64s: []int64{0, 0, 0}}
	done := make(chan cResult, 1)
	go func() {
		for k := int64(0); k < 2; k++ {
			if r := testPush(h.ret, k, 3, []testColumn{strings32("a b", "cc", "d e f"), labels, floats}, nil); r.ret < 0 {
				done <- r
				return
			}
			testIngestEnd(h.ret, k)
		}
		done <- cResult{}
	}()
	if r := testTokens(h.ret, 5, [][]uint32{{1}}); r.ret != codeArgument {
		t.Fatalf("tokens before any texts: %v", r)
	}
	var batches [][]string
	for {
		id, texts, r := testTexts(h.ret, 100)
		if r.ret == 2 {
			break
		}
		if r.ret < 0 {
			t.Fatal(r.err())
		}
		if r.ret == 0 {
			continue
		}
		batches = append(batches, texts)
		if _, _, again := testTexts(h.ret, 10); again.ret != codeArgument {
			t.Fatalf("a second batch before the tokens: %v", again)
		}
		var lists [][]uint32
		for _, s := range texts {
			var ids []uint32
			for _, w := range strings.Fields(s) {
				ids = append(ids, uint32(len(w)))
			}
			lists = append(lists, ids)
		}
		if r := testTokens(h.ret, id, lists[:len(lists)-1]); r.ret != codeArgument {
			t.Fatalf("too few token lists: %v", r)
		}
		if r := testTokens(h.ret, id, lists); r.ret < 0 {
			t.Fatal(r.err())
		}
	}
	if r := <-done; r.ret < 0 {
		t.Fatal(r.err())
	}
	if _, _, r := testIngestWait(h.ret, 10_000); r.ret != 1 {
		t.Fatal(r.err())
	}
	if fmt.Sprint(batches) != "[[a b cc] [d e f a b] [cc d e f]]" {
		t.Fatalf("batches %q", batches)
	}
	if got := fmt.Sprint(readCaptions(t, path)); got != "[a b[1 1]|1 cc[2]|2 d e f[1 1 1]|3 a b[1 1]|1 cc[2]|2 d e f[1 1 1]|3]" {
		t.Fatalf("samples %s", got)
	}

	// Tokens pushed beside their captions.
	path = filepath.Join(t.TempDir(), "pushed.beton")
	h2 := testIngest(arrowSpec(path, 1, args), false)
	defer testClose(h2.ret)
	caps := testColumn{kind: 0, list: 32, listOffsets: []int64{0, 2, 3}, offsets: []int64{0, 1, 2, 3}, data: []byte("xyz"),
		tokenOffsets: []uint64{0, 1, 3, 3}, tokens: []uint32{5, 6, 7}}
	if r := testPush(h2.ret, 0, 2, []testColumn{caps, labels, floats}, nil); r.ret < 0 {
		t.Fatal(r.err())
	}
	testIngestEnd(h2.ret, 0)
	if _, _, r := testIngestWait(h2.ret, 10_000); r.ret != 1 {
		t.Fatal(r.err())
	}
	if got := fmt.Sprint(readCaptions(t, path)); got != "[x[5];y[6 7]|1 z|2]" {
		t.Fatalf("samples %s", got)
	}
	bad := caps
	bad.tokenOffsets = []uint64{0, 1, 9, 9}
	h3 := testIngest(arrowSpec(filepath.Join(t.TempDir(), "bad.beton"), 1, args), false)
	defer testClose(h3.ret)
	if r := testPush(h3.ret, 0, 2, []testColumn{bad, labels, floats}, nil); r.ret != codeArgument || !strings.Contains(r.msg, "tokens") {
		t.Fatalf("tokens past the end: %v", r)
	}
}

// Closing a job that waits for rows aborts it: no file appears.
func TestIngestClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "never.beton")
	h := testIngest(arrowSpec(path, 1, ""), false)
	if h.ret <= 0 {
		t.Fatal(h.err())
	}
	if _, _, r := testIngestWait(h.ret, 20); r.ret != 0 {
		t.Fatalf("wait on a job waiting for rows: %v", r)
	}
	before := time.Now()
	if r := testClose(h.ret); r.ret < 0 {
		t.Fatal(r.err())
	}
	if time.Since(before) > 5*time.Second {
		t.Fatal("close took too long")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Fatalf("files left: %v", left)
	}
	if hidden, _ := filepath.Glob(filepath.Join(dir, ".*")); len(hidden) > 0 {
		t.Fatalf("temporary files left: %v", hidden)
	}
}
