package cache

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
)

const blobSize = 700_000 // two samples per 2 MiB page

func blobOf(i int) []byte {
	b := make([]byte, blobSize)
	for k := range b {
		b[k] = byte(i*7 + k/1000)
	}
	binary.LittleEndian.PutUint64(b, uint64(i))
	return b
}

// writeBlobs writes n samples (blob: Bytes, label: Int); sample i lies on
// heap page first+i/2.
func writeBlobs(t *testing.T, n int) *beton.Reader {
	t.Helper()
	path := filepath.Join(t.TempDir(), "blobs.beton")
	descs := []field.Desc{{Type: field.Bytes, Name: "blob"}, {Type: field.Int, Name: "label"}}
	enc, err := imageenc.NewEncoder(descs[0], field.ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := betontest.Write(t, path, descs, []field.Encoder{enc, field.NewIntEncoder()},
		beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 1}, n, func(i int) []field.Value {
			return []field.Value{{Data: blobOf(i)}, {Int: int64(i)}}
		})
	for i := 0; i < n; i++ {
		if PageOf(r, uint64(i)) != PageOf(r, 0)+int64(i/2) {
			t.Fatalf("sample %d on page %d; the test assumes two samples per page", i, PageOf(r, uint64(i)))
		}
	}
	return r
}

func newProcess(t *testing.T, r *beton.Reader, max int, order []uint64) *Process {
	t.Helper()
	pool := NewPages(int(r.PageSize()))
	p, err := NewProcess(r, max, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		p.Free()
		pool.Close()
	})
	p.Plan(order)
	return p
}

func seq(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i)
	}
	return out
}

func resident(p *Process) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pages)
}

func isResident(p *Process, i uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.pages[PageOf(p.r, i)]
	return ok
}

func checkRead(t *testing.T, p *Process, i uint64) {
	t.Helper()
	col, heap, err := p.Read(i, 0)
	if err != nil {
		t.Fatalf("read sample %d: %v", i, err)
	}
	if binary.LittleEndian.Uint64(col[8:]) != blobSize || !slices.Equal(heap, blobOf(int(i))) {
		t.Fatalf("sample %d: wrong bytes", i)
	}
	if _, heap, err := p.Read(i, 1); err != nil || heap != nil {
		t.Fatalf("sample %d label: heap %v, %v", i, heap, err)
	}
}

func TestProcessBound(t *testing.T) {
	r := writeBlobs(t, 10)
	p := newProcess(t, r, 2, seq(10))
	for _, tc := range []struct {
		id   uint64
		want bool
	}{{0, true}, {2, true}, {4, false}, {1, true}, {5, false}} {
		ok, err := p.TryAcquire(tc.id)
		if err != nil || ok != tc.want {
			t.Fatalf("TryAcquire(%d) = %v, %v; want %v", tc.id, ok, err, tc.want)
		}
	}
	if n := resident(p); n != 2 {
		t.Fatalf("%d resident pages, want 2", n)
	}
	for _, id := range []uint64{0, 1, 2} {
		checkRead(t, p, id)
	}
	if _, _, err := p.Read(4, 0); err == nil {
		t.Fatal("reading a sample that was not acquired succeeded")
	}

	// Acquire blocks while both pages are pinned.
	done := make(chan error, 1)
	go func() { done <- p.Acquire(4) }()
	select {
	case err := <-done:
		t.Fatalf("Acquire(4) returned (%v) with no room", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.Release(0) // sample 1 still pins page 0
	select {
	case err := <-done:
		t.Fatalf("Acquire(4) returned (%v) while page 0 is still pinned", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.Release(1) // the last use of page 0: dropped, room for page 2
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if isResident(p, 0) {
		t.Fatal("page 0 still resident after its last use")
	}
	checkRead(t, p, 4)
	if n := resident(p); n > 2 {
		t.Fatalf("%d resident pages, bound 2", n)
	}
	p.Release(2)
	p.Release(4)
	if st := p.Stats(); st.PeakResidentPages != 2 || st.PagesRead != 3 {
		t.Fatalf("stats %+v, want peak 2 and 3 page reads", st)
	}
}

// TestProcessKeepsPagesForLaterUse: a page whose samples are not all done
// stays resident while idle, and is evicted only when room is needed.
func TestProcessKeepsPagesForLaterUse(t *testing.T) {
	r := writeBlobs(t, 10)
	// Sample 1 (page 0) comes back at the end of the plan.
	p := newProcess(t, r, 2, []uint64{0, 2, 3, 1})
	for _, id := range []uint64{0, 2} {
		if err := p.Acquire(id); err != nil {
			t.Fatal(err)
		}
		p.Release(id)
	}
	if !isResident(p, 0) {
		t.Fatal("page 0 was dropped though sample 1 still needs it")
	}
	if err := p.Acquire(3); err != nil {
		t.Fatal(err)
	}
	p.Release(3)
	if isResident(p, 2) {
		t.Fatal("page 1 kept after its last use")
	}
	if err := p.Acquire(1); err != nil {
		t.Fatal(err)
	}
	checkRead(t, p, 1)
	p.Release(1)
	if n := resident(p); n != 0 {
		t.Fatalf("%d pages resident after every last use", n)
	}
	if st := p.Stats(); st.PagesRead != 2 {
		t.Fatalf("%d page reads, want 2 (page 0 kept)", st.PagesRead)
	}

	// With no room, an idle page still needed later is evicted rather than
	// blocking, and read again when its time comes.
	q := newProcess(t, r, 1, []uint64{0, 2, 1})
	for _, id := range []uint64{0, 2, 1} {
		ok, err := q.TryAcquire(id)
		if err != nil || !ok {
			t.Fatalf("TryAcquire(%d) = %v, %v", id, ok, err)
		}
		checkRead(t, q, id)
		q.Release(id)
	}
	if st := q.Stats(); st.PagesRead != 3 || st.PeakResidentPages != 1 {
		t.Fatalf("stats %+v, want 3 reads and a peak of 1", st)
	}
}

// TestProcessCloseUnblocks: Close wakes a blocked Acquire with an error.
func TestProcessCloseUnblocks(t *testing.T) {
	r := writeBlobs(t, 6)
	p := newProcess(t, r, 1, seq(6))
	if err := p.Acquire(0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Acquire(2) }()
	time.Sleep(20 * time.Millisecond)
	p.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Acquire on a closed cache succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a blocked Acquire")
	}
	if _, err := p.TryAcquire(4); err == nil {
		t.Fatal("TryAcquire after Close succeeded")
	}
	p.Release(0) // after Close: harmless
}

// TestProcessUnplanned: samples not in the plan still work (no remaining
// uses: dropped at release).
func TestProcessUnplanned(t *testing.T) {
	r := writeBlobs(t, 4)
	p := newProcess(t, r, 2, nil)
	for _, id := range []uint64{3, 0} {
		if err := p.Acquire(id); err != nil {
			t.Fatal(err)
		}
		checkRead(t, p, id)
		p.Release(id)
		if isResident(p, id) {
			t.Fatalf("sample %d's page kept with no planned use", id)
		}
	}
}

func TestOSSource(t *testing.T) {
	r := writeBlobs(t, 4)
	o, err := NewOS(r)
	if err != nil {
		t.Fatal(err)
	}
	o.Plan(seq(4))
	for i := uint64(0); i < 4; i++ {
		ok, err := o.TryAcquire(i)
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		_, heap, err := o.Read(i, 0)
		if err != nil || !slices.Equal(heap, blobOf(int(i))) {
			t.Fatalf("sample %d: %v", i, err)
		}
		o.Release(i)
	}
	o.Close()
}

// TestProcessFieldOnAnotherPage: a (corrupt) sample whose second heap field
// points into another page must fail to read, not read a page it has not
// pinned (which may be evicted and recycled under the reader).
func TestProcessFieldOnAnotherPage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.beton")
	descs := []field.Desc{{Type: field.Bytes, Name: "a"}, {Type: field.Bytes, Name: "b"}}
	enc, _ := imageenc.NewEncoder(descs[0], field.ImageOptions{})
	r0 := betontest.Write(t, path, descs, []field.Encoder{enc, enc}, beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 1},
		4, func(i int) []field.Value { return []field.Value{{Data: blobOf(i)}, {Data: blobOf(i + 10)[:1000]}} })
	// Sample 0's field b now points at sample 2's (page 1).
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	colB0 := int(r0.MetadataOffset()) + r0.Layout.Offsets[1]
	colB2 := colB0 + 2*r0.Layout.RowSize
	copy(data[colB0:colB0+16], data[colB2:colB2+16])
	r0.Close()
	bad := filepath.Join(t.TempDir(), "bad.beton")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := betontest.Open(t, bad)
	p := newProcess(t, r, 4, seq(4))
	for _, id := range []uint64{0, 2} {
		if err := p.Acquire(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := p.Read(0, 1); err == nil || !errors.Is(err, beton.ErrFormat) {
		t.Fatalf("reading a field on a page the sample does not pin: %v", err)
	}
	if _, heap, err := p.Read(0, 0); err != nil || !slices.Equal(heap, blobOf(0)) {
		t.Fatalf("field a of sample 0: %v", err)
	}
}

// TestProcessReadsAheadWithoutMap: over a file read through ReadAt only (as
// remote files are), the cache starts reading the planned order's pages
// while it has room, before the scheduler asks; every page is still read
// once and the bound holds. A mapped file keeps the scheduler's lead only.
func TestProcessReadsAheadWithoutMap(t *testing.T) {
	const n = 12 // 6 pages
	mapped := writeBlobs(t, n)
	f, err := os.Open(mapped.Path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	unmapped, err := beton.OpenAt(mapped.Path, f, st.Size(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unmapped.Close()
	reversed := seq(n)
	slices.Reverse(reversed)
	for _, c := range []struct {
		name      string
		r         *beton.Reader
		max       int
		order     []uint64
		afterPlan int // pages resident after Plan, before any Acquire
		pagesRead uint64
	}{
		{"unmapped sequential", unmapped, 3, seq(n), 3, 6},
		{"unmapped reversed", unmapped, 4, reversed, 4, 6},
		{"unmapped room for all", unmapped, 10, seq(n), 6, 6},
		{"mapped", mapped, 3, seq(n), 0, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProcess(t, c.r, c.max, c.order)
			if got := resident(p); got != c.afterPlan {
				t.Fatalf("%d pages resident after Plan, want %d", got, c.afterPlan)
			}
			for _, i := range c.order {
				if err := p.Acquire(i); err != nil {
					t.Fatal(err)
				}
				if got := resident(p); got > c.max {
					t.Fatalf("%d pages resident, bound %d", got, c.max)
				}
				checkRead(t, p, i)
				p.Release(i)
			}
			if got := p.Stats().PagesRead; got != c.pagesRead {
				t.Fatalf("%d pages read, want %d", got, c.pagesRead)
			}
		})
	}
}

// stallingFile blocks ReadAt of heap pages, [from, to), until release is
// closed, as a stalled server would.
type stallingFile struct {
	f        *os.File
	from, to int64
	release  chan struct{}
}

func (s stallingFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.from && off < s.to {
		<-s.release
	}
	return s.f.ReadAt(p, off)
}

// TestProcessCloseDoesNotWaitForReads: ending an epoch early returns while
// page reads are still stalled.
func TestProcessCloseDoesNotWaitForReads(t *testing.T) {
	mapped := writeBlobs(t, 6)
	f, err := os.Open(mapped.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	release := make(chan struct{})
	var once sync.Once
	unstall := func() { once.Do(func() { close(release) }) }
	defer unstall()
	start, _, err := mapped.PageRange(uint64(PageOf(mapped, 0)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := beton.OpenAt(mapped.Path, stallingFile{f, int64(start), int64(mapped.Header.AllocTablePtr), release}, st.Size(), nil)
	if err != nil {
		t.Fatal(err)
	}
	live := LivePages()
	pool := NewPages(int(r.PageSize()))
	p, err := NewProcess(r, 3, pool)
	if err != nil {
		t.Fatal(err)
	}
	p.Plan(seq(6))
	if err := p.Acquire(0); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { p.Close(); p.Free(); pool.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close and Free waited for stalled reads")
	}
	if LivePages() == live {
		t.Fatal("the buffer of a page still being read was unmapped under the read")
	}
	unstall() // the reads end: their buffers are unmapped then
	waitLivePages(t, live)
}

func waitLivePages(t *testing.T, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for LivePages() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d page buffers mapped, want %d", LivePages(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPagesReusedAndReturned: epochs of one loader share the pool's buffers,
// and closing the pool unmaps every one of them, whichever way each epoch ended.
func TestPagesReusedAndReturned(t *testing.T) {
	r := writeBlobs(t, 40)
	for _, tc := range []struct {
		name  string
		epoch func(p *Process, order []uint64)
	}{
		{"whole epochs", func(p *Process, order []uint64) {
			for _, i := range order {
				if err := p.Acquire(i); err != nil {
					t.Fatal(err)
				}
				if _, _, err := p.Read(i, 0); err != nil {
					t.Fatal(err)
				}
				p.Release(i)
			}
		}},
		{"epochs ended early, pages held", func(p *Process, order []uint64) {
			for _, i := range order {
				if ok, err := p.TryAcquire(i); err != nil {
					t.Fatal(err)
				} else if !ok {
					return // the cache is full of pages still held
				}
				if _, _, err := p.Read(i, 0); err != nil { // read: no load left in flight
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := LivePages()
			pool := NewPages(int(r.PageSize()))
			var peak int64
			for epoch := 0; epoch < 4; epoch++ {
				p, err := NewProcess(r, 3, pool)
				if err != nil {
					t.Fatal(err)
				}
				order := seq(40)
				p.Plan(order)
				tc.epoch(p, order)
				p.Close()
				p.Free()
				peak = max(peak, LivePages()-live)
			}
			if peak > 3 {
				t.Errorf("%d buffers mapped for a cache of 3 pages: epochs did not reuse them", peak)
			}
			pool.Close()
			waitLivePages(t, live)
		})
	}
}
