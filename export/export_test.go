package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/loader"
)

// The FFCV-written fixture: 257 samples of (label: int, value: float).
var scalars = filepath.Join("..", "tests", "fixtures", "ffcv-1.0", "scalars.beton")

func openScalars(t *testing.T) int64 {
	t.Helper()
	r := testDatasetOpen(fmt.Sprintf("[%q]", scalars))
	if r.ret <= 0 {
		t.Fatalf("open: %v", r.err())
	}
	return r.ret
}

func scalarsSpec(extra string) string {
	return fmt.Sprintf(`{"path": %q, "batch_size": 16, "num_workers": 2, "batches_ahead": 2, "order": "sequential",
		"world": 1, "os_cache": true, "outputs": [{"field": 0, "ops": [{"op": "int"}]},
		{"field": 1, "ops": [{"op": "float"}]}]%s}`, scalars, extra)
}

// waitLive waits for the live-object count to return to want (deleters and
// closes settle asynchronously in the pool).
func waitLive(t *testing.T, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for testLive() != want {
		if time.Now().After(deadline) {
			t.Fatalf("live objects %d, want %d (tensor refs %d)", testLive(), want, len(tensorRefs.m))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitGoroutines waits for the goroutine count to return to want: a closed
// loader's workers exit just after they signal it.
func waitGoroutines(t *testing.T, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for testGoroutines() > want {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines %d, want %d", testGoroutines(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestABIVersionIsTheHeaders(t *testing.T) {
	if got := testABIVersion(); got != 4 {
		t.Fatalf("ffcv_abi_version() = %d", got)
	}
}

func TestBadHandles(t *testing.T) {
	h := openScalars(t)
	l := testLoaderCreate(scalarsSpec(""))
	if l.ret <= 0 {
		t.Fatal(l.err())
	}
	defer testClose(l.ret)
	closed := openScalars(t)
	testClose(closed)
	cases := []struct {
		name string
		call func() cResult
		code int64
		msg  string
	}{
		{"read zero handle", func() cResult { _, r := testReaderRead(0, 0, 0); return r }, codeArgument, "invalid or closed handle 0"},
		{"read negative handle", func() cResult { _, r := testReaderRead(-7, 0, 0); return r }, codeArgument, "invalid or closed handle -7"},
		{"read closed handle", func() cResult { _, r := testReaderRead(closed, 0, 0); return r }, codeArgument, "invalid or closed"},
		{"read a loader handle", func() cResult { _, r := testReaderRead(l.ret, 0, 0); return r }, codeArgument, "not a"},
		{"read null outputs", func() cResult { return testReaderReadNil(h) }, codeArgument, "null pointer"},
		{"read past the end", func() cResult { _, r := testReaderRead(h, 257, 0); return r }, codeArgument, ""},
		{"close twice", func() cResult { return testClose(closed) }, codeArgument, "invalid or closed"},
		{"iterate a reader", func() cResult { _, r := testIterNext(h, 4); return r }, codeArgument, "not a"},
		{"unknown spec key", func() cResult { return testLoaderCreate(scalarsSpec(`, "bogus": 1`)) }, codeArgument, `unknown field "bogus"`},
		{"unknown trace mode", func() cResult { return testLoaderCreate(scalarsSpec(`, "trace": "on"`)) }, codeArgument, `trace mode "on"`},
		{"trace a reader", func() cResult { _, r := testLoaderTrace(h, 4); return r }, codeArgument, "not a"},
		{"unknown op argument", func() cResult {
			return testLoaderCreate(strings.Replace(scalarsSpec(""), `{"op": "int"}`, `{"op": "int", "p": 1}`, 1))
		}, codeArgument, `unknown field "p"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.call()
			if c.name == "read past the end" { // an error of some class, with a message
				if r.ret >= 0 || r.msg == "" {
					t.Fatalf("got %+v", r)
				}
				return
			}
			if r.ret != c.code || !strings.Contains(r.msg, c.msg) {
				t.Fatalf("got %d %q, want %d containing %q", r.ret, r.msg, c.code, c.msg)
			}
		})
	}
	if r := testClose(h); r.ret != 0 {
		t.Fatal(r.err())
	}
}

// TestDatasetOpen: what names a dataset reaches the core as it was given,
// and each kind of failure comes back as its error class.
func TestDatasetOpen(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FFCV_GO_REMOTE_ATTEMPTS", "many")
	cases := []struct {
		name    string
		paths   string // JSON; "null" for a NULL pointer
		code    int64  // 0: opens
		msg     string
		expands string // what ffcv_dataset_paths gives when it opens
	}{
		{"one file", fmt.Sprintf("[%q]", scalars), 0, "", fmt.Sprintf("[%q]", scalars)},
		{"shards", fmt.Sprintf("[%q, %q]", scalars, scalars), 0, "", fmt.Sprintf("[%q,%q]", scalars, scalars)},
		{"NULL", "null", codeArgument, "null pointer", ""},
		{"not JSON", "[", codeArgument, "JSON list of strings", ""},
		{"not a list", `{"a": 1}`, codeArgument, "JSON list of strings", ""},
		{"no paths", "[]", codeArgument, "no paths given", ""},
		{"missing file", `["/nonexistent.beton"]`, codeNotFound, "nonexistent", ""},
		{"not a beton", `["export_test.go"]`, codeFormat, "export_test.go", ""},
		{"directory without shards", fmt.Sprintf("[%q]", dir), codeNotFound, "no .beton files", ""},
		{"glob matching nothing", fmt.Sprintf("[%q]", dir+"/*.beton"), codeNotFound, "matches no file", ""},
		{"bad glob", fmt.Sprintf("[%q]", dir+"/[.beton"), codeArgument, "syntax error in pattern", ""},
		{"bad remote setting", `["s3://bucket/x.beton"]`, codeArgument, "FFCV_GO_REMOTE_ATTEMPTS", ""},
		{"not a URL we read", `["ftp://host/x.beton"]`, codeNotFound, "ftp://host/x.beton", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := testDatasetOpen(c.paths)
			if c.code == 0 {
				if r.ret <= 0 {
					t.Fatal(r.err())
				}
				testClose(r.ret)
				if got, pr := testDatasetPaths(c.paths); pr.ret <= 0 || got != c.expands {
					t.Fatalf("paths %s, %v; want %s", got, pr.err(), c.expands)
				}
				return
			}
			if r.ret != c.code || !strings.Contains(r.msg, c.msg) {
				t.Fatalf("got %d %q, want %d containing %q", r.ret, r.msg, c.code, c.msg)
			}
		})
	}
}

// TestWriterDestinations: ffcv_writer_create reports a destination it cannot
// write as the caller's error, before anything is written.
func TestWriterDestinations(t *testing.T) {
	dir := t.TempDir()
	spec := `{"num_samples": 1, "fields": [{"name": "x", "type_id": 1}]}`
	cases := []struct {
		name string
		path string
		env  string // FFCV_GO_REMOTE_TIMEOUT
		code int64  // 0: created
		msg  string
	}{
		{"local file", filepath.Join(dir, "out.beton"), "", 0, ""},
		{"HTTP is read-only", "https://host/out.beton", "", codeArgument, "only s3:// URLs can be written"},
		{"S3 URL without a key", "s3://bucket", "", codeArgument, "bucket and a key"},
		{"bad remote setting", "s3://bucket/out.beton", "0", codeArgument, "FFCV_GO_REMOTE_TIMEOUT"},
		{"missing directory", filepath.Join(dir, "no", "out.beton"), "", codeNotFound, "out.beton"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("FFCV_GO_REMOTE_TIMEOUT", c.env)
			r := testWriterCreate(c.path, spec)
			if c.code == 0 {
				if r.ret <= 0 {
					t.Fatal(r.err())
				}
				if a := testWriterAbort(r.ret); a.ret != 0 {
					t.Fatal(a.err())
				}
				return
			}
			if r.ret != c.code || !strings.Contains(r.msg, c.msg) {
				t.Fatalf("got %d %q, want %d containing %q", r.ret, r.msg, c.code, c.msg)
			}
		})
	}
}

// TestReaderPairs: the allocation index and the page maps reach C as the
// core computes them, counted first or copied into the caller's arrays.
func TestReaderPairs(t *testing.T) {
	arrays := filepath.Join("..", "tests", "fixtures", "ffcv-1.0", "arrays.beton")
	r := testDatasetOpen(fmt.Sprintf("[%q]", arrays))
	if r.ret <= 0 {
		t.Fatal(r.err())
	}
	defer testClose(r.ret)
	br, err := beton.Open(arrays, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	ptrs, sizes, err := br.AllocIndex()
	if err != nil {
		t.Fatal(err)
	}
	samples, pages, err := br.AllocPages()
	if err != nil || len(ptrs) < 2 || len(samples) < 2 {
		t.Fatalf("fixture: %d allocations, %d page pairs (%v)", len(ptrs), len(samples), err)
	}
	cases := []struct {
		name   string
		h      int64
		pages  bool
		room   int // -1: NULL arrays
		code   int64
		wa, wb []uint64
	}{
		{"index: count", r.ret, false, -1, int64(len(ptrs)), nil, nil},
		{"index: copy", r.ret, false, len(ptrs), int64(len(ptrs)), ptrs, sizes},
		{"index: short arrays", r.ret, false, 1, int64(len(ptrs)), ptrs[:1], sizes[:1]},
		{"pages: count", r.ret, true, -1, int64(len(samples)), nil, nil},
		{"pages: copy", r.ret, true, len(samples), int64(len(samples)), samples, pages},
		{"pages: short arrays", r.ret, true, 1, int64(len(samples)), samples[:1], pages[:1]},
		{"pages: bad handle", 0, true, -1, codeArgument, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b, res := testReaderPairs(c.h, c.pages, c.room)
			if res.ret != c.code || (c.room > 0 && (!slices.Equal(a, c.wa) || !slices.Equal(b, c.wb))) {
				t.Fatalf("got %d (%s) %v %v, want %d %v %v", res.ret, res.msg, a, b, c.code, c.wa, c.wb)
			}
		})
	}
}

// TestReadMatchesFixture reads every sample's label column through the ABI.
func TestReadMatchesFixture(t *testing.T) {
	h := openScalars(t)
	defer testClose(h)
	info, r := testJSON(ffcv_reader_info, h)
	if r.ret != 0 {
		t.Fatal(r.err())
	}
	var ri readerInfo
	if err := json.Unmarshal([]byte(info), &ri); err != nil || ri.NumSamples != 257 || len(ri.Fields) != 2 {
		t.Fatalf("info %s: %v", info, err)
	}
	for i := uint64(0); i < ri.NumSamples; i++ {
		n, r := testReaderRead(h, i, 0)
		if r.ret != 0 || n != 8 {
			t.Fatalf("sample %d: %v, %d bytes", i, r.err(), n)
		}
	}
}

// TestCloseWaitsForCallsInFlight: ffcv_close must not free an object while a
// call holds it (it would unmap memory under ffcv_reader_read).
func TestCloseWaitsForCallsInFlight(t *testing.T) {
	h := openScalars(t)
	_, done, err := acquire[any](h)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan cResult)
	go func() { closed <- testClose(h) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case r := <-closed:
		t.Fatalf("close returned %+v while a call held the handle", r)
	default:
	}
	if _, r := testReaderRead(h, 0, 0); r.ret != codeArgument { // no new call starts on a closing handle
		t.Fatalf("read on a closing handle: %+v", r)
	}
	done()
	if r := <-closed; r.ret != 0 {
		t.Fatal(r.err())
	}
}

// TestConcurrentReadAndClose hammers one reader from many goroutines while
// another closes it: every read succeeds with the right bytes or fails
// cleanly with a closed-handle error (run with -race).
func TestConcurrentReadAndClose(t *testing.T) {
	for round := 0; round < 20; round++ {
		h := openScalars(t)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := uint64(0); i < 200; i++ {
					_, r := testReaderRead(h, (i*7+uint64(g))%257, 0)
					if r.ret == codeArgument && strings.Contains(r.msg, "invalid or closed") {
						return
					}
					if r.ret != 0 {
						errs <- r.err()
						return
					}
				}
			}(g)
		}
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		if r := testClose(h); r.ret != 0 {
			t.Fatal(r.err())
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

// TestLoaderThroughABI runs an epoch: batches in order, shapes, sample ids,
// and every slot back once the tensors are deleted.
func TestLoaderThroughABI(t *testing.T) {
	base, routines := testLive(), testGoroutines()
	l := testLoaderCreate(scalarsSpec(""))
	if l.ret <= 0 {
		t.Fatal(l.err())
	}
	it := testLoaderStart(l.ret, 0)
	if it.ret <= 0 {
		t.Fatal(it.err())
	}
	if testGoroutines() <= routines {
		t.Fatal("a started iterator runs no goroutines: the leak check below would prove nothing")
	}
	if _, r := testIterNext(it.ret, 2); r.ret != codeArgument { // room for 2 of 3 tensors
		t.Fatalf("short buffer: %+v", r)
	}
	var held []testTensor
	seen := 0
	for {
		ts, r := testIterNext(it.ret, 3)
		if r.ret < 0 {
			t.Fatal(r.err())
		}
		if r.ret == 0 {
			break
		}
		n := ts[2].shape()[0]
		if got := ts[0].shape(); len(got) != 2 || got[0] != n || got[1] != 1 {
			t.Fatalf("label shape %v", got)
		}
		ids := ts[2].bytes()
		for k := int64(0); k < n; k++ {
			if id := binary.LittleEndian.Uint64(ids[8*k:]); id != uint64(seen) {
				t.Fatalf("sample id %d at position %d", id, seen)
			}
			seen++
		}
		held = append(held, ts...)
	}
	if seen != 257 {
		t.Fatalf("%d samples, want 257", seen)
	}
	for _, ts := range held {
		ts.free()
	}
	testClose(it.ret)
	testClose(l.ret)
	waitLive(t, base)
	waitGoroutines(t, routines)
}

// TestLoaderTraceThroughABI: a loader made with "trace": "events" hands its
// spans out through ffcv_loader_trace, counted with a NULL array and taken
// in parts; its stats have the stage totals. Without tracing there is none.
func TestLoaderTraceThroughABI(t *testing.T) {
	for _, c := range []struct {
		mode      string
		wantSpans bool
	}{{"", false}, {`, "trace": "off"`, false}, {`, "trace": "stages"`, false}, {`, "trace": "events"`, true}} {
		t.Run(c.mode, func(t *testing.T) {
			l := testLoaderCreate(scalarsSpec(c.mode))
			if l.ret <= 0 {
				t.Fatal(l.err())
			}
			defer testClose(l.ret)
			it := testLoaderStart(l.ret, 0)
			if it.ret <= 0 {
				t.Fatal(it.err())
			}
			for {
				ts, r := testIterNext(it.ret, 3)
				if r.ret < 0 {
					t.Fatal(r.err())
				}
				if r.ret == 0 {
					break
				}
				for _, x := range ts {
					x.free()
				}
			}
			testClose(it.ret) // the workers have handed over their spans
			_, pending := testLoaderTrace(l.ret, -1)
			if pending.ret < 0 || (pending.ret > 0) != c.wantSpans {
				t.Fatalf("%d spans waiting: %v", pending.ret, pending.err())
			}
			stats, r := testJSON(ffcv_loader_stats, l.ret)
			if r.ret < 0 {
				t.Fatal(r.err())
			}
			traced := c.mode != "" && !strings.Contains(c.mode, "off")
			if strings.Contains(stats, `"stages"`) != traced {
				t.Fatalf("stats %s", stats)
			}
			// A traced loader's stats time each output's operations by name.
			var got struct {
				Ops [][]struct {
					Op    string `json:"op"`
					Ns    int64  `json:"ns"`
					Count int64  `json:"count"`
				} `json:"ops"`
			}
			if err := json.Unmarshal([]byte(stats), &got); err != nil {
				t.Fatal(err)
			}
			if !traced {
				if got.Ops != nil {
					t.Fatalf("untraced stats have ops: %s", stats)
				}
			} else if len(got.Ops) != 2 || len(got.Ops[0]) != 1 || got.Ops[0][0].Op != "int" ||
				got.Ops[0][0].Count != 257 || len(got.Ops[1]) != 1 || got.Ops[1][0].Op != "float" {
				t.Fatalf("ops %+v", got.Ops)
			}
			if !c.wantSpans {
				return
			}
			first, r := testLoaderTrace(l.ret, 10)
			if r.ret != 10 || len(first) != 10 {
				t.Fatalf("took %d of %d spans into room for 10: %v", r.ret, pending.ret, r.err())
			}
			rest, r := testLoaderTrace(l.ret, int(pending.ret))
			if int64(len(rest))+10 != pending.ret || r.ret != int64(len(rest)) {
				t.Fatalf("then %d, of %d", len(rest), pending.ret)
			}
			samples := map[uint64]bool{}
			for _, ev := range append(first, rest...) {
				start, dur, arg, track, stage := traceSpan(ev)
				if start <= 0 || dur < 0 || track < 0 || track > 1 || stage < 0 || stage > 3 || arg > 256 {
					t.Fatalf("span %d %d %d %d %d", start, dur, arg, track, stage)
				}
				samples[arg] = true
			}
			if len(samples) != 257 {
				t.Fatalf("spans of %d samples, want 257", len(samples))
			}
		})
	}
}

// TestFailedWrapLeaksNothing: when wrapping tensor k of a batch fails, the
// tensors already made are deleted, no tensor is handed out, and the batch's
// slot comes back (it used to stay referenced forever).
func TestFailedWrapLeaksNothing(t *testing.T) {
	defer func() { tensorAllocFails = nil }()
	for _, failAt := range []int{0, 1, 2} {
		t.Run(fmt.Sprint(failAt), func(t *testing.T) {
			base, refs := testLive(), len(tensorRefs.m)
			l := testLoaderCreate(scalarsSpec(""))
			it := testLoaderStart(l.ret, 0)
			tensorAllocFails = func(k int) bool { return k == failAt }
			ts, r := testIterNext(it.ret, 3)
			tensorAllocFails = nil
			if r.ret != codeInternal || !strings.Contains(r.msg, "out of memory") || len(ts) != 0 {
				t.Fatalf("got %+v, %d tensors", r, len(ts))
			}
			tensorRefs.Lock()
			n := len(tensorRefs.m)
			tensorRefs.Unlock()
			if n != refs {
				t.Fatalf("%d tensor references, want %d", n, refs)
			}
			ts, r = testIterNext(it.ret, 3) // the next batch still comes
			if r.ret != 3 {
				t.Fatal(r.err())
			}
			for _, x := range ts {
				x.free()
			}
			testClose(it.ret)
			testClose(l.ret)
			waitLive(t, base)
		})
	}
}

// TestReleaseNeverPanics: the release runs inside torch's deleter; a bad or
// repeated key, or a panic in the release, must not escape.
func TestReleaseNeverPanics(t *testing.T) {
	testRelease(1 << 60) // unknown key
	tensorRefs.Lock()
	tensorRefs.next++
	key := tensorRefs.next
	tensorRefs.m[key] = (*loader.Batch)(nil) // releasing it panics
	tensorRefs.Unlock()
	testRelease(key)
	testRelease(key) // twice
}

// TestCloseUnblocksNext: closing an iterator (or its loader) from another
// goroutine while ffcv_iter_next waits makes the call return, not hang.
func TestCloseUnblocksNext(t *testing.T) {
	for _, what := range []string{"iterator", "loader"} {
		t.Run(what, func(t *testing.T) {
			base, routines := testLive(), testGoroutines()
			l := testLoaderCreate(scalarsSpec(""))
			it := testLoaderStart(l.ret, 0)
			var held []testTensor
			results := make(chan cResult, 1)
			go func() {
				for { // hold every batch: the pool runs dry and Next waits
					ts, r := testIterNext(it.ret, 3)
					if r.ret <= 0 {
						results <- r
						return
					}
					held = append(held, ts...)
				}
			}()
			time.Sleep(100 * time.Millisecond)
			target := it.ret
			if what == "loader" {
				target = l.ret
			}
			if r := testClose(target); r.ret != 0 {
				t.Fatal(r.err())
			}
			select {
			case r := <-results:
				if r.ret > 0 {
					t.Fatalf("got %+v", r)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ffcv_iter_next still blocked after close")
			}
			for _, x := range held {
				x.free()
			}
			if what == "loader" {
				testClose(it.ret)
			} else {
				testClose(l.ret)
			}
			waitLive(t, base)
			waitGoroutines(t, routines)
		})
	}
}

func TestNormalizeTable(t *testing.T) {
	const imagenet = `{"mean": [123.675, 116.28, 103.53], "std": [58.395, 57.12, 57.375], "dtype": "%s"}`
	for _, tc := range []struct {
		name, spec string
		room       int
		want       string // "" for success, else a part of the error
	}{
		{"float32", fmt.Sprintf(imagenet, "<f4"), 256 * 3 * 4, ""},
		{"float16", fmt.Sprintf(imagenet, "<f2"), 256 * 3 * 2, ""},
		{"room too small", fmt.Sprintf(imagenet, "<f4"), 100, "the table is 3072 bytes, out has 100"},
		{"no room", fmt.Sprintf(imagenet, "<f4"), 0, "the table is 3072 bytes"},
		{"NULL spec", "null", 16, "NULL spec"},
		{"not JSON", "{", 16, "normalize"},
		{"zero std", `{"mean": [1], "std": [0], "dtype": "<f4"}`, 1024, "std [0]"},
		{"float64", `{"mean": [1], "std": [2], "dtype": "<f8"}`, 2048, "float16 or float32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table, r := testNormalizeTable(tc.spec, tc.room)
			if tc.want != "" {
				if r.ret != codeArgument || !strings.Contains(r.msg, tc.want) {
					t.Fatalf("got %d %q, want an argument error with %q", r.ret, r.msg, tc.want)
				}
				return
			}
			if err := r.err(); err != nil {
				t.Fatal(err)
			}
			// Row x, column c: (x - mean[c]) / std[c], rounded once.
			mean, std := []float64{123.675, 116.28, 103.53}, []float64{58.395, 57.12, 57.375}
			for x := 0; x < 256; x++ {
				for c := 0; c < 3; c++ {
					v := (float64(x) - mean[c]) / std[c]
					if tc.name == "float32" {
						got := math.Float32frombits(binary.LittleEndian.Uint32(table[(x*3+c)*4:]))
						if got != float32(v) {
							t.Fatalf("x=%d c=%d: %v, want %v", x, c, got, float32(v))
						}
					} else if got := half(binary.LittleEndian.Uint16(table[(x*3+c)*2:])); math.Abs(got-v) > math.Abs(v)/2048 {
						t.Fatalf("x=%d c=%d: %v, want %v rounded to float16", x, c, got, v)
					}
				}
			}
		})
	}
}

// ffcv_resize_crop and ffcv_pad take rows [r0, r1) and columns [c0, c1)
// of the source: resize_crop at the region's own size copies it, pad puts
// it top left and zeroes the rest; sizes, regions and destinations that do
// not fit are argument errors.
func TestResizeCropAndPad(t *testing.T) {
	const h, w = 4, 6
	src := make([]byte, h*w*3)
	for i := range src {
		src[i] = byte(i + 1)
	}
	// region is rows [1, 3) and columns [2, 5) of src, placed in a dw-wide image.
	region := func(dw int) []byte {
		out := make([]byte, 2*dw*3)
		for y := 0; y < 2; y++ {
			copy(out[y*dw*3:], src[((1+y)*w+2)*3:((1+y)*w+5)*3])
		}
		return out
	}
	padded := append(region(4), make([]byte, 4*3)...) // 3×4: the region, then zeros
	for _, tc := range []struct {
		name                   string
		pad                    bool
		src                    []byte
		r0, r1, c0, c1, dh, dw int64
		want                   []byte
		err                    string
	}{
		{"resize_crop at the region's size", false, src, 1, 3, 2, 5, 2, 3, region(3), ""},
		{"pad", true, src, 1, 3, 2, 5, 3, 4, padded, ""},
		{"resize_crop of an empty region", false, src, 1, 1, 2, 5, 2, 3, nil, "rows [1, 1) and columns [2, 5) are not inside the 4x6 image"},
		{"pad of a region outside", true, src, 1, 5, 2, 5, 3, 4, nil, "rows [1, 5) and columns [2, 5) are not inside"},
		{"resize_crop to nothing", false, src, 1, 3, 2, 5, 0, 3, nil, "image sizes 4x6 -> 0x3 must be positive"},
		{"pad into a smaller destination", true, src, 1, 3, 2, 5, 2, 2, nil, "the 2x3 region does not fit the 2x2 destination"},
		{"resize_crop of NULL", false, nil, 1, 3, 2, 5, 2, 3, nil, "source"},
		{"pad of NULL", true, nil, 1, 3, 2, 5, 3, 4, nil, "source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, r := testCrop(tc.pad, tc.src, h, w, tc.r0, tc.r1, tc.c0, tc.c1, tc.dh, tc.dw)
			if tc.err != "" {
				if r.ret != codeArgument || !strings.Contains(r.msg, tc.err) {
					t.Fatalf("got %d %q, want an argument error with %q", r.ret, r.msg, tc.err)
				}
				return
			}
			if err := r.err(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// half decodes a normal or zero IEEE float16.
func half(h uint16) float64 {
	sign, exp, frac := 1.0, int(h>>10)&0x1f, float64(h&0x3ff)
	if h&0x8000 != 0 {
		sign = -1
	}
	if exp == 0 {
		return sign * frac * math.Pow(2, -24)
	}
	return sign * (1 + frac/1024) * math.Pow(2, float64(exp-15))
}

// ffcv_op_check: a bad argument of any family is an argument error whose
// message is the core's alone and names the argument; a valid spec, even a
// decoder's, passes without a file.
func TestOpCheck(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       string // "" for success, else the whole message
	}{
		{"solarize", `{"op": "solarize", "threshold": 128, "p": 0.2, "seed": 3}`, ""},
		{"decoder", `{"op": "rgb_rrc", "size": [224, 224], "scale": [0.08, 1], "ratio": [0.4, 1], "seed": 10, "second_seed": 5}`, ""},
		{"batch op", `{"op": "image_mixup", "alpha": 0.2, "same_lambda": true}`, ""},
		{"probability", `{"op": "solarize", "threshold": 0, "p": 128}`, "solarization_prob 128 must be in [0, 1]"},
		{"decoder's argument", `{"op": "rgb_resize_pad", "size": [8, 8], "scale": [0, 1], "fill": [0, 0, 0]}`, "scale [0 1] must be (min, max) with 0 < min <= max <= 1"},
		{"batch op's argument", `{"op": "label_mixup", "alpha": 0, "same_lambda": true}`, "alpha 0 must be positive"},
		{"label", `{"op": "label", "of": {"op": "grayscale", "p": 0.2}}`, "seed is missing: it must be the seed of the image operation it reports on"},
		{"unknown op", `{"op": "sharpen"}`, `unknown operation "sharpen"`},
		{"not JSON", `{`, "operation spec: unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testOpCheck(tc.spec)
			if tc.want == "" {
				if err := r.err(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if r.ret != codeArgument || r.msg != tc.want {
				t.Fatalf("got %d %q, want an argument error %q", r.ret, r.msg, tc.want)
			}
		})
	}
	if r := testOpCheck("null"); r.ret != codeArgument || !strings.Contains(r.msg, "spec") {
		t.Fatalf("NULL spec: %d %q", r.ret, r.msg)
	}
}

// ffcv_op_out: the output a transform makes of an input, as Build infers
// it; an argument error for a bad argument, a refused input or a bad
// input spec.
func TestOpOut(t *testing.T) {
	for _, tc := range []struct {
		spec, in string
		want     string // the output, or the argument error's message
		ok       bool
	}{
		{`{"op": "audio_resample", "orig_freq": 22050, "new_freq": 16000}`, `{"shape": [2, 1000], "dtype": "<f4"}`, `{"shape":[2,2912],"dtype":"|u1"}`, true},
		{`{"op": "whisper_log_mel", "n_mels": 128}`, `{"shape": [100], "dtype": "<f4"}`, `{"shape":[128,12008],"dtype":"|u1"}`, true},
		{`{"op": "flip_h", "p": 0.5}`, `{"shape": [4, 6, 3], "dtype": "|u1"}`, `{"shape":[4,6,3],"dtype":"|u1"}`, true},
		{`{"op": "whisper_log_mel", "n_mels": 64}`, `{"shape": [100], "dtype": "<f4"}`, "n_mels 64 must be 80 or 128", false},
		{`{"op": "mel_spectrogram"}`, `{"shape": [100], "dtype": "<i2"}`, "needs waveforms: an audio decoder's or audio operation's rows (C, 8 + 4·N) uint8 (a length, then float32 samples, per row), or float32 (N,) or (C, N); got [100] int16", false},
		{`{"op": "mel_spectrogram"}`, `{"shape": [100]}`, `input spec {"shape": [100]}: want {"shape": [...], "dtype": "<f4"}`, false},
	} {
		out, r := testOpOut(tc.spec, tc.in)
		if tc.ok && (r.err() != nil || out != tc.want) || !tc.ok && (r.ret != codeArgument || r.msg != tc.want) {
			t.Errorf("%s on %s: %q, %d %q; want %q", tc.spec, tc.in, out, r.ret, r.msg, tc.want)
		}
	}
	if _, r := testOpOut("null", `{"shape": [1], "dtype": "<f4"}`); r.ret != codeArgument || !strings.Contains(r.msg, "spec") {
		t.Fatalf("NULL spec: %d %q", r.ret, r.msg)
	}
}

func TestAugmentOps(t *testing.T) {
	out, r := testAugmentOps()
	if err := r.err(); err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := json.Unmarshal([]byte(out), &names); err != nil || int64(len(names)) != r.ret {
		t.Fatalf("%q (%d): %v", out, r.ret, err)
	}
	if len(names) != 15 || names[0] != "Identity" || names[14] != "Invert" {
		t.Fatalf("names %v", names)
	}
}

// The writer spec's JPEG flags map onto the encoder's options: restart
// markers are spliced into kept sources only when both keep_coefficients
// and restart_markers ask for it.
func TestImageOptionsFromSpec(t *testing.T) {
	for _, tc := range []struct {
		name                              string
		spec                              string
		keep, splice, keepScans, reencode bool
	}{
		{"defaults", `{"restart_markers": true, "jpeg_transcode": true}`, false, false, false, false},
		{"keep_source_jpeg", `{"keep_source_jpeg": true, "restart_markers": true, "jpeg_transcode": true}`,
			true, false, false, false},
		{"keep_coefficients", `{"keep_coefficients": true, "restart_markers": true, "jpeg_transcode": true}`,
			true, true, false, false},
		{"keep_coefficients without markers", `{"keep_coefficients": true, "jpeg_transcode": true}`,
			true, false, true, false},
		{"pixels", `{"restart_markers": false, "jpeg_transcode": false}`, false, false, true, true},
	} {
		var s fieldSpec
		if err := json.Unmarshal([]byte(tc.spec), &s); err != nil {
			t.Fatal(err)
		}
		o := s.imageOptions(0)
		if o.KeepSourceJPEG != tc.keep || o.SpliceKept != tc.splice || o.KeepScans != tc.keepScans ||
			o.ReencodePixels != tc.reencode {
			t.Errorf("%s: %+v", tc.name, o)
		}
	}
}
