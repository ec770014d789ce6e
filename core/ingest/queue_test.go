package ingest

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
)

// stalled is a source whose first Next waits until go is closed, then
// ends: a shard that is slow to arrive.
type stalled struct{ go_ chan struct{} }

func (s *stalled) Name() string { return "stalled" }
func (s *stalled) Next() (*Item, error) {
	<-s.go_
	return nil, io.EOF
}
func (s *stalled) Close() error { return nil }

// big is a source of n samples of size bytes each (one shared buffer),
// counting the samples read.
type big struct {
	n, size int
	read    atomic.Int64
	buf     []byte
}

func (s *big) Name() string { return "big" }
func (s *big) Next() (*Item, error) {
	k := s.read.Add(1) - 1
	if int(k) >= s.n {
		return nil, io.EOF
	}
	// Dropped: the sample goes through the queues and is never encoded.
	return &Item{Key: fmt.Sprint(k), Values: []field.Value{{Data: s.buf[:s.size]}},
		Problems: []Problem{{Reason: "left out", Dropped: true}}}, nil
}
func (s *big) Close() error { return nil }

// A source's read-ahead is bounded in bytes: while the source before it
// stalls, a source of large samples is read only a queue's bytes ahead,
// not a number of samples whatever their size; one sample larger than the
// budget still passes.
func TestReadAheadBoundedInBytes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size, n  int
		maxAhead int64
	}{
		{"8 MiB samples", 8 << 20, 40, 8 + 2},
		{"oversize samples", 256 << 20, 4, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s0 := &stalled{go_: make(chan struct{})}
			s1 := &big{n: tc.n, size: tc.size, buf: make([]byte, tc.size)}
			d := field.Desc{Type: field.Bytes, Name: "blob"}
			e, _ := field.NewEncoder(d)
			dir := t.TempDir()
			j, err := Run([]Source{s0, s1}, Options{Fields: []field.Desc{d}, Encoders: []field.Encoder{e},
				PageSize: beton.MinPageSize, Workers: 1, Readers: 2, Skip: true,
				Name: func(int) string { return filepath.Join(dir, "out.beton") }})
			if err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			defer once.Do(func() { close(s0.go_) })
			// Wait until the reader of s1 stops reading.
			last := int64(-1)
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
				time.Sleep(200 * time.Millisecond)
				if n := s1.read.Load(); n == last {
					break
				} else {
					last = n
				}
			}
			if last > tc.maxAhead {
				t.Errorf("%d samples of %d bytes read ahead, want at most %d", last, tc.size, tc.maxAhead)
			}
			once.Do(func() { close(s0.go_) })
			// Every sample is left out, each a problem: a write of nothing fails.
			_, err = j.Wait()
			if want := fmt.Sprintf("no sample could be written: %d problems", tc.n); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want %q", err, want)
			}
		})
	}
}
