package remote

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ffcv-go/ffcv-go/core/internal/s3test"
)

func TestMain(m *testing.M) { s3test.Main(m) }

// blob is deterministic test content.
func blob(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// serveBytes is a real range-capable HTTP server (net/http's ServeContent)
// for data, with an ETag so If-Match is exercised.
func serveBytes(data *atomic.Pointer[[]byte]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := *data.Load()
		w.Header().Set("ETag", `"`+strconv.Itoa(len(d))+"-"+strconv.Itoa(int(d[0]))+`"`)
		http.ServeContent(w, r, "data.beton", time.Time{}, bytes.NewReader(d))
	})
}

// flaky sabotages a share of the responses of next: a 503 (with S3's
// SlowDown body), a body cut short (the connection dropped mid-response), or
// a stall longer than the client's timeout. It counts what it did.
type flaky struct {
	next  http.Handler
	rate  float64 // share of responses sabotaged
	stall time.Duration
	mu    sync.Mutex
	rng   *rand.Rand
	n     [4]atomic.Int64 // served, failed, cut, stalled
	all   bool            // sabotage every response with a 503
}

func newFlaky(next http.Handler, rate float64, stall time.Duration) *flaky {
	return &flaky{next: next, rate: rate, stall: stall, rng: rand.New(rand.NewPCG(7, 7))}
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	x, kind := f.rng.Float64(), f.rng.IntN(3)
	f.mu.Unlock()
	if f.all {
		x, kind = 0, 0
	}
	if x >= f.rate {
		f.n[0].Add(1)
		f.next.ServeHTTP(w, r)
		return
	}
	f.n[1+kind].Add(1)
	switch kind {
	case 0:
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
	case 1:
		rec := httptest.NewRecorder()
		f.next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body[:len(body)/2])
		panic(http.ErrAbortHandler) // drops the connection
	case 2:
		select {
		case <-time.After(f.stall):
		case <-r.Context().Done():
		}
		f.next.ServeHTTP(w, r)
	}
}

func (f *flaky) sabotaged() int64 { return f.n[1].Load() + f.n[2].Load() + f.n[3].Load() }
