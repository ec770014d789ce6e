package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ffcv-go/ffcv-go/core/internal/s3test"
)

// fast retries for tests: failures cost milliseconds, not seconds.
var fast = Options{Attempts: 8, Backoff: 2 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Timeout: 2 * time.Second}

func TestIsURLAndRedact(t *testing.T) {
	for _, c := range []struct {
		in     string
		isURL  bool
		redact string
	}{
		{"s3://bucket/train.beton", true, "s3://bucket/train.beton"},
		{"S3://bucket/k", true, "S3://bucket/k"},
		{"https://host/a/b.beton", true, "https://host/a/b.beton"},
		{"http://user:secret@host/x.beton", true, "http://user@host/x.beton"},
		{"https://host/x.beton?X-Amz-Signature=abc&X-Amz-Credential=AKIA", true, "https://host/x.beton?…"},
		{"/data/train.beton", false, "/data/train.beton"},
		{"s3://", false, "s3://"},
		{"file:///x", false, "file:///x"},
	} {
		if got := IsURL(c.in); got != c.isURL {
			t.Errorf("IsURL(%q) = %v", c.in, got)
		}
		if got := Redact(c.in); got != c.redact {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.redact)
		}
	}
}

func TestParseS3(t *testing.T) {
	for _, c := range []struct{ in, bucket, key, err string }{
		{"s3://b/k", "b", "k", ""},
		{"s3://bkt/dir/train.beton", "bkt", "dir/train.beton", ""},
		{"s3://bkt", "", "", "needs a bucket and a key"},
		{"s3://bkt/", "", "", "needs a bucket and a key"},
		{"https://x/y", "", "", "not an s3:// URL"},
	} {
		b, k, err := ParseS3(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseS3(%q): error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || b != c.bucket || k != c.key {
			t.Errorf("ParseS3(%q) = %q, %q, %v", c.in, b, k, err)
		}
	}
}

// TestHTTPReadAt reads ranges through a real net/http server and checks
// bytes, EOF behaviour and how many requests each read took.
func TestHTTPReadAt(t *testing.T) {
	data := blob(1<<20+123, 1)
	var p atomic.Pointer[[]byte]
	p.Store(&data)
	srv := httptest.NewServer(serveBytes(&p))
	defer srv.Close()
	opts := fast
	opts.ChunkSize = 64 << 10
	o, err := Open(context.Background(), srv.URL+"/data.beton", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.Size() != int64(len(data)) {
		t.Fatalf("size %d, want %d", o.Size(), len(data))
	}
	if st := o.Stats(); st.Requests != 1 {
		t.Fatalf("open took %d requests", st.Requests)
	}
	size := int64(len(data))
	for _, c := range []struct {
		name     string
		off, n   int64
		want     int64 // bytes read
		eof      bool
		requests uint64
	}{
		{"header", 0, 24, 24, false, 1},
		{"one chunk", 1000, 64 << 10, 64 << 10, false, 1},
		{"split", 5, 300 << 10, 300 << 10, false, 5},
		{"tail", size - 10, 10, 10, false, 1},
		{"past end", size - 10, 100, 10, true, 1},
		{"at end", size, 5, 0, true, 0},
		{"empty", 7, 0, 0, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := o.Stats()
			buf := make([]byte, c.n)
			n, err := o.ReadAt(buf, c.off)
			if int64(n) != c.want || (err == io.EOF) != c.eof || (err != nil && err != io.EOF) {
				t.Fatalf("ReadAt(%d, %d) = %d, %v; want %d bytes, eof %v", c.n, c.off, n, err, c.want, c.eof)
			}
			if !bytes.Equal(buf[:n], data[c.off:c.off+int64(n)]) {
				t.Fatal("bytes differ from the server's")
			}
			d := o.Stats().Sub(before)
			if d.Requests != c.requests || d.Bytes != uint64(n) || d.Retries != 0 {
				t.Fatalf("stats %+v, want %d requests and %d bytes", d, c.requests, n)
			}
		})
	}
}

// TestHTTPFailures checks which failures are retried and what the final
// error says.
func TestHTTPFailures(t *testing.T) {
	data := blob(4096, 2)
	var p atomic.Pointer[[]byte]
	p.Store(&data)
	for _, c := range []struct {
		name     string
		handler  http.Handler
		openErr  string // error from Open, or
		readErr  string // from the read of bytes [100, 200)
		requests uint64 // for the failing call
		is       error
	}{
		{"404", http.NotFoundHandler(), "open: HTTP 404: Not Found", "", 1, fs.ErrNotExist},
		{"403", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) }),
			"open: HTTP 403", "", 1, fs.ErrPermission},
		{"no ranges", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) }),
			"ignores Range requests", "", 1, nil},
		{"always 503", alwaysFail(serveBytes(&p)),
			"open: HTTP 503 after 8 attempts: Service Unavailable", "", 8, nil},
		{"503 after open", countingHandler(1, serveBytes(&p), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) })),
			"", "read bytes [100, 200): HTTP 502 after 8 attempts: Bad Gateway", 8, nil},
		{"file replaced", countingHandler(1, serveBytes(&p), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			other := blob(4096, 3)
			w.Header().Set("ETag", `"other"`)
			http.ServeContent(w, r, "x", time.Time{}, bytes.NewReader(other))
		})), "", "HTTP 412: the file changed on the server since it was opened", 1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.handler)
			defer srv.Close()
			u := srv.URL + "/x.beton?sig=SECRET"
			o, err := Open(context.Background(), u, fast)
			if c.openErr != "" {
				checkErr(t, err, c.openErr, c.is)
				var re *Error
				if errors.As(err, &re) && uint64(re.Attempts) != c.requests {
					t.Fatalf("%d attempts, want %d", re.Attempts, c.requests)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			before := o.Stats()
			_, err = o.ReadAt(make([]byte, 100), 100)
			checkErr(t, err, c.readErr, c.is)
			if d := o.Stats().Sub(before); d.Requests != c.requests || d.Retries != c.requests-1 || d.Bytes != 0 {
				t.Fatalf("stats %+v, want %d requests", d, c.requests)
			}
		})
	}
}

// alwaysFail answers every request with a 503 SlowDown.
func alwaysFail(next http.Handler) http.Handler {
	f := newFlaky(next, 1, 0)
	f.all = true
	return f
}

// countingHandler serves the first n requests with first, then with rest.
func countingHandler(n int64, first, rest http.Handler) http.Handler {
	var k atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k.Add(1) <= n {
			first.ServeHTTP(w, r)
		} else {
			rest.ServeHTTP(w, r)
		}
	})
}

func checkErr(t *testing.T, err error, want string, is error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("error %q shows the URL's query", err)
	}
	if is != nil && !errors.Is(err, is) {
		t.Fatalf("error %v is not %v", err, is)
	}
}

// TestFlakyLosesNothing reads every page of an object through a server that
// fails, cuts short or stalls a fifth of its responses: every byte arrives,
// and the retries are counted.
func TestFlakyLosesNothing(t *testing.T) {
	data := blob(3<<20, 4)
	var p atomic.Pointer[[]byte]
	p.Store(&data)
	f := newFlaky(serveBytes(&p), 0.2, time.Second)
	srv := httptest.NewServer(f)
	defer srv.Close()
	opts := fast
	opts.Timeout = 500 * time.Millisecond
	opts.Attempts = 12
	o, err := Open(context.Background(), srv.URL+"/data.beton", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	before := o.Stats()
	const page = 32 << 10
	got := make([]byte, len(data))
	var wg sync.WaitGroup
	errs := make(chan error, len(data)/page)
	for off := 0; off < len(data); off += page {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := o.ReadAt(got[off:off+page], int64(off)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("bytes differ")
	}
	d := o.Stats().Sub(before)
	pages := uint64(len(data) / page)
	if d.Requests != pages+d.Retries || d.Bytes != uint64(len(data)) || d.Retries == 0 {
		t.Fatalf("stats %+v for %d pages", d, pages)
	}
	if f.n[1].Load() == 0 || f.n[2].Load() == 0 || f.n[3].Load() == 0 {
		t.Fatalf("the server did not sabotage every way: %d served, %d failed, %d cut, %d stalled",
			f.n[0].Load(), f.n[1].Load(), f.n[2].Load(), f.n[3].Load())
	}
	t.Logf("%d pages: %d requests, %d retries; %d responses sabotaged", pages, d.Requests, d.Retries, f.sabotaged())
}

// TestInFlightBound fires many reads at once: no more than MaxInFlight
// reach the server together, and more than one does.
func TestInFlightBound(t *testing.T) {
	data := blob(1<<20, 5)
	var p atomic.Pointer[[]byte]
	p.Store(&data)
	var now, peak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := now.Add(1)
		defer now.Add(-1)
		for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
		}
		time.Sleep(10 * time.Millisecond)
		serveBytes(&p).ServeHTTP(w, r)
	}))
	defer srv.Close()
	for _, limit := range []int{1, 4} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			peak.Store(0)
			opts := fast
			opts.MaxInFlight = limit
			o, err := Open(context.Background(), srv.URL, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			var wg sync.WaitGroup
			for k := 0; k < 32; k++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, 1000)
					if _, err := o.ReadAt(buf, int64(k*1000)); err != nil || !bytes.Equal(buf, data[k*1000:k*1000+1000]) {
						t.Errorf("read %d: %v", k, err)
					}
				}()
			}
			wg.Wait()
			if got := peak.Load(); got > int64(limit) || (limit > 1 && got < 2) {
				t.Fatalf("%d requests in flight at the server, limit %d", got, limit)
			}
			if got := o.Stats().PeakInFlight; got > int64(limit) || (limit > 1 && got < 2) {
				t.Fatalf("peak in flight %d, limit %d", got, limit)
			}
		})
	}
}

// TestCloseStopsReads: a read blocked on a stalled server returns when the
// object is closed, without waiting for its retries.
func TestCloseStopsReads(t *testing.T) {
	data := blob(4096, 6)
	var p atomic.Pointer[[]byte]
	p.Store(&data)
	stall := make(chan struct{})
	srv := httptest.NewServer(countingHandler(1, serveBytes(&p), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	})))
	defer srv.Close()
	defer close(stall)
	opts := fast
	opts.Timeout = time.Minute
	o, err := Open(context.Background(), srv.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { _, err := o.ReadAt(make([]byte, 10), 0); done <- err }()
	time.Sleep(50 * time.Millisecond)
	o.Close()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("error %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read still blocked 5 s after Close")
	}
}

// TestS3 reads and writes through moto, a real S3-compatible server on
// 127.0.0.1, via the standard configuration chain with an endpoint override.
func TestS3(t *testing.T) {
	endpoint := s3test.Start(t)
	s3test.Env(t, endpoint)
	data := blob(2<<20+77, 8)
	s3test.Put(t, endpoint, "remote-test", "dir/data.beton", data)
	ctx := context.Background()

	t.Run("read", func(t *testing.T) {
		opts := fast
		opts.ChunkSize = 1 << 20
		o, err := Open(ctx, "s3://remote-test/dir/data.beton", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		if o.Size() != int64(len(data)) {
			t.Fatalf("size %d", o.Size())
		}
		for _, c := range []struct{ off, n int64 }{{0, 24}, {1000, 5000}, {0, int64(len(data))}, {int64(len(data)) - 3, 3}} {
			before := o.Stats()
			buf := make([]byte, c.n)
			if _, err := o.ReadAt(buf, c.off); err != nil || !bytes.Equal(buf, data[c.off:c.off+c.n]) {
				t.Fatalf("ReadAt(%d, %d): %v", c.n, c.off, err)
			}
			want := uint64((c.n + opts.ChunkSize - 1) / opts.ChunkSize)
			if d := o.Stats().Sub(before); d.Requests != want || d.Bytes != uint64(c.n) {
				t.Fatalf("stats %+v, want %d requests", d, want)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, c := range []struct{ url, want string }{
			{"s3://remote-test/missing.beton", "s3://remote-test/missing.beton: open: HTTP 404 NoSuchKey"},
			{"s3://no-such-bucket/data.beton", "s3://no-such-bucket/data.beton: open: HTTP 404 NoSuchBucket"},
			{"s3://remote-test/dir", "(objects exist under s3://remote-test/dir/: a directory is named with its trailing slash)"},
		} {
			_, err := Open(ctx, c.url, fast)
			checkErr(t, err, c.want, fs.ErrNotExist)
		}
		_, err := BeginUpload(ctx, "s3://no-such-bucket/out.beton", fast)
		checkErr(t, err, "s3://no-such-bucket/out.beton: start upload: HTTP 404 NoSuchBucket", fs.ErrNotExist)
	})

	t.Run("flaky", func(t *testing.T) {
		target, _ := url.Parse(endpoint)
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.ErrorLog = log.New(io.Discard, "", 0) // cancelled stalls are the point
		f := newFlaky(rp, 0.2, 1500*time.Millisecond)
		proxy := httptest.NewServer(f)
		defer proxy.Close()
		t.Setenv("AWS_ENDPOINT_URL", proxy.URL)
		opts := fast
		opts.Timeout, opts.Attempts, opts.ChunkSize = time.Second, 12, 64<<10
		o, err := Open(ctx, "s3://remote-test/dir/data.beton", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		before := o.Stats()
		got := make([]byte, len(data))
		if _, err := o.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%v, or bytes differ", err)
		}
		d := o.Stats().Sub(before)
		chunks := uint64((int64(len(data)) + opts.ChunkSize - 1) / opts.ChunkSize)
		if d.Retries == 0 || d.Requests != chunks+d.Retries || f.sabotaged() == 0 {
			t.Fatalf("stats %+v for %d chunks, %d sabotaged", d, chunks, f.sabotaged())
		}
	})

	t.Run("glob", func(t *testing.T) {
		for _, k := range []string{"shards/a-0.beton", "shards/a-1.beton", "shards/b-0.beton", "shards/notes.txt", "shards/sub/a-2.beton"} {
			s3test.Put(t, endpoint, "remote-test", k, []byte("x"))
		}
		for _, c := range []struct{ pattern, want, err string }{
			{"s3://remote-test/shards/", "a-0 a-1 b-0", ""},
			{"s3://remote-test/shards/a-*.beton", "a-0 a-1", ""},
			{"s3://remote-test/shards/?-0.beton", "a-0 b-0", ""},
			{"s3://remote-test/shards/*/a-*.beton", "sub/a-2", ""},
			{"s3://remote-test/shards/z*", "", "matches no object"},
			{"s3://remote-test/shards/[", "", "bad URL"},
			{"s3://no-such-bucket/x/", "", "HTTP 404 NoSuchBucket"},
		} {
			if !IsS3Pattern(c.pattern) {
				t.Fatalf("IsS3Pattern(%q) = false", c.pattern)
			}
			got, err := Glob(ctx, c.pattern, fast)
			if c.err != "" {
				checkErr(t, err, c.err, nil)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, u := range got {
				names = append(names, strings.TrimSuffix(strings.TrimPrefix(u, "s3://remote-test/shards/"), ".beton"))
			}
			if strings.Join(names, " ") != c.want {
				t.Fatalf("Glob(%q) = %v, want %s", c.pattern, got, c.want)
			}
		}
		for _, u := range []string{"s3://b/k.beton", "s3://bucket", "https://h/a*.beton", "/local/*.beton"} {
			if IsS3Pattern(u) {
				t.Fatalf("IsS3Pattern(%q) = true", u)
			}
		}
	})

	t.Run("upload", func(t *testing.T) {
		dir := t.TempDir()
		for _, c := range []struct {
			name string
			size int
			fail bool // abort instead of completing
		}{
			{"small", 1000, false},
			{"two parts", 16<<20 + 5, false},
			{"aborted", 5000, true},
		} {
			key := "up/" + strings.ReplaceAll(c.name, " ", "-") + ".beton"
			want := blob(c.size, uint64(c.size))
			path := filepath.Join(dir, "f")
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			u, err := BeginUpload(ctx, "s3://remote-test/"+key, fast)
			if err != nil {
				t.Fatal(err)
			}
			if c.fail {
				if err := u.Abort(); err != nil {
					t.Fatal(err)
				}
			} else if err := u.Complete(ctx, path); err != nil {
				t.Fatal(err)
			}
			got, err := s3test.Get(endpoint, "remote-test", key)
			if c.fail {
				if err == nil {
					t.Fatalf("%s: an aborted upload left an object", c.name)
				}
			} else if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %v, or %d bytes differ from the %d uploaded", c.name, err, len(got), len(want))
			}
		}
		// A file that cannot be read aborts the upload: no object, no parts.
		u, err := BeginUpload(ctx, "s3://remote-test/up/broken.beton", fast)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Complete(ctx, filepath.Join(dir, "missing")); err == nil {
			t.Fatal("upload of a missing file succeeded")
		}
		if _, err := s3test.Get(endpoint, "remote-test", "up/broken.beton"); err == nil {
			t.Fatal("a failed upload left an object")
		}
		c, _, _ := newS3Client(ctx, 1)
		bucket := "remote-test"
		out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket})
		if err != nil || len(out.Uploads) != 0 {
			t.Fatalf("multipart uploads left: %v %v", out, err)
		}
	})
}
