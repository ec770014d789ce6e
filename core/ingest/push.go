package ingest

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// Push is a set of sources whose samples the caller hands over (Put) as it
// reads them, e.g. record batches of Parquet files: source k's samples, in
// order, then End(k); the job takes source k's before source k+1's.
type Push struct {
	sources []*pushSource
}

// NewPush returns a source per name (for reports and per-source files).
func NewPush(names []string) *Push {
	p := &Push{}
	for _, n := range names {
		p.sources = append(p.sources, &pushSource{name: n, items: make(chan []*Item, 4), stop: make(chan struct{})})
	}
	return p
}

// Sources are the job's sources, in order.
func (p *Push) Sources() []Source {
	out := make([]Source, len(p.sources))
	for i, s := range p.sources {
		out[i] = s
	}
	return out
}

// ErrClosed is returned by Put and End once the job has ended.
var ErrClosed = errors.New("the conversion has ended")

func (p *Push) source(k int) (*pushSource, error) {
	if k < 0 || k >= len(p.sources) {
		return nil, fmt.Errorf("source %d of %d", k, len(p.sources))
	}
	return p.sources[k], nil
}

// Put hands source k's next samples over; it blocks while the job is
// behind.
func (p *Push) Put(k int, items []*Item) error {
	s, err := p.source(k)
	if err != nil {
		return err
	}
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return fmt.Errorf("%s: samples after its end", s.name)
	}
	select {
	case s.items <- items:
		return nil
	case <-s.stop:
		return ErrClosed
	}
}

// End says source k has no more samples.
func (p *Push) End(k int) error {
	s, err := p.source(k)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		close(s.items)
	}
	return nil
}

type pushSource struct {
	name    string
	items   chan []*Item
	pending []*Item
	stop    chan struct{}

	mu          sync.Mutex
	ended, clsd bool
}

func (s *pushSource) Name() string { return s.name }

func (s *pushSource) Next() (*Item, error) {
	for len(s.pending) == 0 {
		select {
		case b, ok := <-s.items:
			if !ok {
				return nil, io.EOF
			}
			s.pending = b
		case <-s.stop:
			return nil, ErrClosed
		}
	}
	it := s.pending[0]
	s.pending = s.pending[1:]
	return it, nil
}

func (s *pushSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.clsd {
		s.clsd = true
		close(s.stop)
	}
	return nil
}
