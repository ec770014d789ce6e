package webdataset

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ffcv-go/ffcv-go/core/remote"
)

// ChunkSize is how much of a remote shard one request reads; the next
// chunk is requested while the current one is parsed.
const ChunkSize = 8 << 20

// Open opens a shard for reading from start to end: a local file, or an
// s3:// or http(s):// URL read in large ranges with the next one in flight.
func Open(ctx context.Context, name string, opts remote.Options) (io.ReadCloser, error) {
	if !remote.IsURL(name) {
		return os.Open(name)
	}
	o, err := remote.Open(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return newSequential(o, o.Size(), ChunkSize), nil
}

// sequential reads an io.ReaderAt from start to end, a chunk ahead.
type sequential struct {
	src    io.ReaderAt
	closer io.Closer
	cur    []byte
	ahead  chan chunk
	stop   chan struct{}
	err    error
}

type chunk struct {
	b   []byte
	err error
}

type readerAtCloser interface {
	io.ReaderAt
	io.Closer
}

func newSequential(src readerAtCloser, size, chunkSize int64) *sequential {
	s := &sequential{src: src, closer: src, ahead: make(chan chunk, 1), stop: make(chan struct{})}
	go func() {
		defer close(s.ahead)
		for off := int64(0); off < size; off += chunkSize {
			b := make([]byte, min(chunkSize, size-off))
			n, err := src.ReadAt(b, off)
			if err == io.EOF && n == len(b) {
				err = nil
			}
			if err == nil && n < len(b) {
				err = fmt.Errorf("read %d of %d bytes at %d: %w", n, len(b), off, io.ErrUnexpectedEOF)
			}
			select {
			case s.ahead <- chunk{b[:n], err}:
			case <-s.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *sequential) Read(p []byte) (int, error) {
	for len(s.cur) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		c, ok := <-s.ahead
		if !ok {
			s.err = io.EOF
			return 0, io.EOF
		}
		s.cur, s.err = c.b, c.err
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

func (s *sequential) Close() error {
	close(s.stop)
	err := s.closer.Close()
	for range s.ahead { // the reader goroutine ends: closed reads fail at once
	}
	return err
}
