// Package cache gives loader workers the bytes of samples: straight from the
// OS page cache through the file's memory map, or from the loader's own
// process cache, which reads heap pages ahead in the epoch's known order and
// keeps a bounded number of them resident.
package cache

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
)

// Source yields a sample's field for decoding. Acquire is called (in order)
// by the scheduler before the sample is decoded and Release after; Read may
// then be called from any worker.
type Source interface {
	// Acquire prepares sample i (all fields) for reading; it may block to
	// keep memory bounded. It reports the page the sample lives on.
	Acquire(i uint64) error
	// TryAcquire is Acquire that reports false instead of blocking.
	TryAcquire(i uint64) (bool, error)
	Read(i uint64, f int) (col, heap []byte, err error)
	Release(i uint64)
	// Plan tells the source the order of samples it will be asked for, so
	// it can read ahead and evict after last use.
	Plan(order []uint64)
	Stats() Stats
	// Close wakes callers blocked in Acquire and refuses new ones.
	Close()
	// Free releases the source's memory; called once nothing reads from it.
	Free()
}

// Stats are cache counters.
type Stats struct {
	PagesRead         uint64 `json:"pages_read"`
	PeakResidentPages int    `json:"peak_resident_pages"`
	// ShardPages is PagesRead by file of the reader (see beton.Reader.ShardAt);
	// ShardBytes the bytes those reads returned and ShardReadNs the time they
	// took, summed over reads that ran at once.
	ShardPages  []uint64 `json:"shard_pages,omitempty"`
	ShardBytes  []uint64 `json:"shard_bytes,omitempty"`
	ShardReadNs []int64  `json:"shard_read_ns,omitempty"`
}

// PageOf returns the heap page of sample i: the page of its first heap
// pointer, or -1 if it has none.
func PageOf(r *beton.Reader, i uint64) int64 {
	for f, d := range r.Fields {
		col, err := r.Column(i, f)
		if err != nil {
			return -1
		}
		off, ok := field.HeapPtrOffset(d.Type)
		if !ok {
			continue
		}
		return int64(binary.LittleEndian.Uint64(col[off:]) / r.PageSize())
	}
	return -1
}

// OS reads through the memory map; the kernel's page cache does the caching.
// As the scheduler acquires samples (ahead of the workers), it asks the
// kernel to read their pages ahead.
type OS struct {
	r       *beton.Reader
	advised map[int64]bool // pages already advised this epoch; scheduler-only
}

// NewOS returns the OS cache source; r must be mapped.
func NewOS(r *beton.Reader) (*OS, error) {
	if _, err := r.Data(); err != nil {
		return nil, fmt.Errorf("the OS cache reads through the memory map: %w", err)
	}
	return &OS{r: r, advised: map[int64]bool{}}, nil
}

// Acquire advises the kernel to read sample i's page, once per page.
func (o *OS) Acquire(i uint64) error {
	p := PageOf(o.r, i)
	if p < 0 || o.advised[p] {
		return nil
	}
	o.advised[p] = true
	data, _ := o.r.Data()
	if start, end, err := o.r.PageRange(uint64(p)); err == nil {
		unix.Madvise(data[start:end], unix.MADV_WILLNEED)
	}
	return nil
}

// TryAcquire never needs to wait.
func (o *OS) TryAcquire(i uint64) (bool, error) { return true, o.Acquire(i) }

func (o *OS) Read(i uint64, f int) ([]byte, []byte, error) {
	return o.r.Read(i, f)
}
func (o *OS) Release(uint64) {}
func (o *OS) Stats() Stats   { return Stats{} }
func (o *OS) Close()         {}
func (o *OS) Free()          {}

// Plan starts a new epoch's advice.
func (o *OS) Plan(order []uint64) { clear(o.advised) }
