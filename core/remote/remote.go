// Package remote reads objects on S3-compatible storage and HTTP(S) servers
// as an io.ReaderAt (one range GET per read, a bounded number in flight,
// retried with backoff on transient failures), and uploads files to S3 with
// multipart uploads that are completed only when the whole file is there.
// Its environment (request settings, AWS credentials, region and endpoint)
// is read in env.go only.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune requests; zero fields take the defaults.
type Options struct {
	MaxInFlight int           // concurrent requests per object (16)
	Attempts    int           // tries per request, the first included (8)
	Backoff     time.Duration // first retry's delay bound, doubled per retry (200 ms), full jitter
	MaxBackoff  time.Duration // cap on one retry's delay (20 s)
	Timeout     time.Duration // one attempt, from sending to the last body byte (120 s)
	ChunkSize   int64         // reads above this are split into concurrent requests (16 MiB)
}

func (o Options) withDefaults() Options {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 16
	}
	if o.Attempts <= 0 {
		o.Attempts = 8
	}
	if o.Backoff <= 0 {
		o.Backoff = 200 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 20 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 120 * time.Second
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 16 << 20
	}
	return o
}

// Stats are an object's counters since it was opened: every request sent
// (retries included), the body bytes received, and how many requests were
// retries. PeakInFlight is the most requests that were in flight at once.
type Stats struct {
	Requests     uint64 `json:"requests"`
	Bytes        uint64 `json:"bytes"`
	Retries      uint64 `json:"retries"`
	PeakInFlight int64  `json:"peak_in_flight"`
}

// Sub is s - t for the cumulative counters (PeakInFlight is kept): what
// happened between two snapshots.
func (s Stats) Sub(t Stats) Stats {
	return Stats{Requests: s.Requests - t.Requests, Bytes: s.Bytes - t.Bytes, Retries: s.Retries - t.Retries, PeakInFlight: s.PeakInFlight}
}

// Error is a request that failed for good: a permanent status (404, 403...)
// or a transient one that outlived every retry.
type Error struct {
	URL      string // redacted: no password, no query
	Op       string // "read", "open", "upload"...
	Off, End int64  // byte range [Off, End); End 0: none
	Status   int    // the last HTTP status; 0 when no response came
	Code     string // the S3 error code, when there was one
	Attempts int
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.URL)
	b.WriteString(": ")
	b.WriteString(e.Op)
	if e.End > e.Off {
		fmt.Fprintf(&b, " bytes [%d, %d)", e.Off, e.End)
	}
	switch {
	case e.Status != 0 && e.Code != "":
		fmt.Fprintf(&b, ": HTTP %d %s", e.Status, e.Code)
	case e.Status != 0:
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	default:
		b.WriteString(": no response")
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap lets errors.Is see a missing object as fs.ErrNotExist and a
// refused one as fs.ErrPermission.
func (e *Error) Unwrap() []error {
	errs := []error{e.Err}
	switch e.Status {
	case 404:
		errs = append(errs, fs.ErrNotExist)
	case 401, 403:
		errs = append(errs, fs.ErrPermission)
	}
	return errs
}

// ErrBadURL is wrapped by errors about a URL that cannot name an object.
var ErrBadURL = errors.New("bad URL")

// IsURL tells whether name is read by this package rather than from disk.
func IsURL(name string) bool {
	for _, p := range []string{"s3://", "http://", "https://"} {
		if len(name) > len(p) && strings.EqualFold(name[:len(p)], p) {
			return true
		}
	}
	return false
}

// Redact returns u without a password or query string (presigned URLs carry
// their signature there), for messages.
func Redact(u string) string {
	p, err := url.Parse(u)
	if err == nil && p.User == nil && p.RawQuery == "" && p.Fragment == "" && !p.ForceQuery {
		return u
	}
	if err != nil {
		if i := strings.IndexAny(u, "?#"); i >= 0 {
			u = u[:i]
		}
		if i := strings.Index(u, "@"); i >= 0 {
			if j := strings.Index(u, "://"); j >= 0 && j < i {
				u = u[:j+3] + "…" + u[i:]
			}
		}
		return u
	}
	if p.User != nil {
		p.User = url.User(p.User.Username())
	}
	q := p.RawQuery != ""
	p.RawQuery, p.Fragment = "", ""
	s := p.String()
	if q {
		s += "?…"
	}
	return s
}

// getter is one transport's ranged GET: it fills p with bytes [off,
// off+len(p)) of the object, or returns a status (0 without a response) and
// whether the failure may pass on a retry.
type getter interface {
	get(ctx context.Context, p []byte, off int64) (status int, code string, retry bool, err error)
	close()
}

// Object is an opened remote object. It is safe for concurrent use.
type Object struct {
	url   string // redacted
	size  int64
	opts  Options
	tr    getter
	sem   chan struct{}
	ctx   context.Context
	stop  context.CancelFunc
	count counters
}

type counters struct {
	requests, bytes, retries atomic.Uint64
	inFlight, peak           atomic.Int64
}

func (c *counters) stats() Stats {
	return Stats{Requests: c.requests.Load(), Bytes: c.bytes.Load(), Retries: c.retries.Load(), PeakInFlight: c.peak.Load()}
}

// Open opens the object at rawURL (s3://bucket/key, http:// or https://) and
// learns its size with one request.
func Open(ctx context.Context, rawURL string, opts Options) (*Object, error) {
	opts = opts.withDefaults()
	o := &Object{url: Redact(rawURL), opts: opts, sem: make(chan struct{}, opts.MaxInFlight)}
	o.ctx, o.stop = context.WithCancel(context.Background())
	var err error
	switch {
	case hasScheme(rawURL, "s3://"):
		o.tr, o.size, err = openS3(ctx, o, rawURL)
	case hasScheme(rawURL, "http://"), hasScheme(rawURL, "https://"):
		o.tr, o.size, err = openHTTP(ctx, o, rawURL)
	default:
		err = fmt.Errorf("%s: %w: not an s3://, http:// or https:// URL", o.url, ErrBadURL)
	}
	if err != nil {
		o.stop()
		return nil, err
	}
	return o, nil
}

func hasScheme(u, scheme string) bool {
	return len(u) >= len(scheme) && strings.EqualFold(u[:len(scheme)], scheme)
}

// URL is the object's URL, redacted.
func (o *Object) URL() string { return o.url }

// Size is the object's length in bytes.
func (o *Object) Size() int64 { return o.size }

// Stats returns the counters.
func (o *Object) Stats() Stats { return o.count.stats() }

// Close cancels requests in flight; later reads fail.
func (o *Object) Close() error {
	o.stop()
	o.tr.close()
	return nil
}

// ReadAt reads len(p) bytes at off, splitting large reads into concurrent
// requests. Like os.File, a read past the end returns io.EOF with the bytes
// that exist.
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", o.url, off)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= o.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), o.size-off))
	var errs []error
	if int64(n) <= o.opts.ChunkSize {
		if err := o.read(p[:n], off); err != nil {
			return 0, err
		}
	} else {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for lo := 0; lo < n; lo += int(o.opts.ChunkSize) {
			hi := min(lo+int(o.opts.ChunkSize), n)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := o.read(p[lo:hi], off+int64(lo)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			return 0, errs[0]
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// read fetches p at off with one request, retried.
func (o *Object) read(p []byte, off int64) error {
	return retry(o.ctx, o.opts, &o.count, o.sem, func(ctx context.Context) (int, string, bool, error) {
		status, code, again, err := o.tr.get(ctx, p, off)
		if err == nil {
			o.count.bytes.Add(uint64(len(p)))
		}
		return status, code, again, err
	}, func(status int, code string, attempts int, err error) error {
		return &Error{URL: o.url, Op: "read", Off: off, End: off + int64(len(p)), Status: status, Code: code, Attempts: attempts, Err: err}
	})
}

// retry is the one retry loop of the package: exponential backoff with full
// jitter between attempts, each attempt under its own timeout.
func retry(ctx context.Context, opts Options, c *counters, sem chan struct{},
	attempt func(context.Context) (int, string, bool, error),
	fail func(status int, code string, attempts int, err error) error) error {
	var (
		status int
		code   string
		err    error
	)
	for k := 1; ; k++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return fail(0, "", k-1, ctx.Err())
		}
		if n := c.inFlight.Add(1); n > c.peak.Load() {
			for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
			}
		}
		c.requests.Add(1)
		if k > 1 {
			c.retries.Add(1)
		}
		actx, cancel := context.WithTimeout(ctx, opts.Timeout)
		var again bool
		status, code, again, err = attempt(actx)
		if err != nil && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			again, err = true, fmt.Errorf("no complete response within %v: %w", opts.Timeout, err)
		}
		cancel()
		c.inFlight.Add(-1)
		<-sem
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fail(status, code, k, fmt.Errorf("%w (closed while reading)", ctx.Err()))
		}
		if !again || k >= opts.Attempts {
			return fail(status, code, k, err)
		}
		d := min(opts.MaxBackoff, opts.Backoff<<min(k-1, 30))
		t := time.NewTimer(rand.N(d) + 1)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fail(status, code, k, ctx.Err())
		}
	}
}

// transient tells whether a failed attempt without an HTTP status (a
// connection refused or reset, a body cut short, a timeout) may pass on a
// retry: anything but a cancellation.
func transient(err error) bool {
	return !errors.Is(err, context.Canceled)
}

// retryStatus tells whether an HTTP status is worth retrying: server errors,
// throttling (429, S3's 503 SlowDown), and S3's 400 RequestTimeout.
func retryStatus(status int, code string) bool {
	switch code {
	case "RequestTimeout", "Throttling", "ThrottlingException", "SlowDown", "RequestTimeTooSkewed", "InternalError":
		return true
	}
	return status >= 500 || status == 429 || status == 408
}
