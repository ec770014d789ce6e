package loader

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/cache"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/procs"
)

func baseConfig() Config {
	return Config{BatchSize: 7, Workers: 2, BatchesAhead: 2, DropLast: true, Seed: 5, Order: "random", OSCache: true}
}

// TestDeterministicAcrossWorkers: the same seed gives the same bytes in every
// batch whatever the number of workers, with random orders and transforms,
// through both caches and with a batch operation.
func TestDeterministicAcrossWorkers(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 61, "raw")
	r := betontest.Open(t, path)
	mixed := map[string][]string{
		"image": append(slices.Clone(imagePipeline["image"]), `{"op":"image_mixup","alpha":0.4,"same_lambda":false}`),
		"label": {`{"op":"int"}`, `{"op":"label_mixup","alpha":0.4,"same_lambda":false}`},
	}
	for _, tc := range []struct {
		name    string
		order   string
		os      bool
		outputs map[string][]string
	}{
		{"random", "random", true, imagePipeline},
		{"quasi_process", "quasi_random", false, imagePipeline},
		{"sequential_mixup", "sequential", true, mixed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ref []copied
			for _, workers := range []int{1, 2, 4} {
				cfg := baseConfig()
				cfg.Workers, cfg.Order, cfg.OSCache = workers, tc.order, tc.os
				l := newLoader(t, r, cfg, tc.outputs)
				got := epoch(t, l, 3, 0)
				if len(got) != 61/7 {
					t.Fatalf("%d batches, want %d", len(got), 61/7)
				}
				if ref == nil {
					ref = got
					continue
				}
				sameEpochs(t, fmt.Sprintf("workers %d vs 1", workers), ref, got)
			}
			// Another epoch differs (random transforms and order are keyed by the epoch).
			cfg := baseConfig()
			cfg.Order = tc.order
			other := epoch(t, newLoader(t, r, cfg, tc.outputs), 4, 0)
			if tc.order != "sequential" && slices.Equal(other[0].ids(), ref[0].ids()) {
				t.Fatal("epochs 3 and 4 have the same first batch")
			}
		})
	}
}

// TestContent checks the samples are the ones in the file.
func TestContent(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 30, "raw")
	r := betontest.Open(t, path)
	cfg := baseConfig()
	cfg.DropLast = false
	l := newLoader(t, r, cfg, map[string][]string{"image": {`{"op":"rgb_simple"}`}, "label": {`{"op":"int"}`}})
	got := epoch(t, l, 0, 0)
	seen := map[uint64]bool{}
	for _, b := range got {
		for pos, id := range b.ids() {
			seen[id] = true
			if !slices.Equal(b.bufs[0][pos*imgW*imgH*3:(pos+1)*imgW*imgH*3], pixels(int(id))) {
				t.Fatalf("sample %d: wrong pixels", id)
			}
			if lab := binary.LittleEndian.Uint64(b.bufs[1][8*pos:]); lab != id {
				t.Fatalf("sample %d: label %d", id, lab)
			}
		}
	}
	if len(seen) != 30 {
		t.Fatalf("saw %d distinct samples of 30", len(seen))
	}
}

// TestHeldBatchesNeverOverwritten holds every batch of an epoch (far more
// than the initial ring), so the ring must grow instead of reusing slots.
func TestHeldBatchesNeverOverwritten(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 80, "raw")
	r := betontest.Open(t, path)
	for _, osCache := range []bool{true, false} {
		cfg := baseConfig()
		cfg.BatchSize, cfg.BatchesAhead, cfg.OSCache = 4, 1, osCache
		wl := newLoader(t, r, cfg, imagePipeline)
		want := epoch(t, wl, 0, 0)
		wl.Close()
		base := LiveSlots()

		l := newLoader(t, r, cfg, imagePipeline)
		it, err := l.Start(0, 0, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		var held []*Batch
		for {
			b, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				break
			}
			held = append(held, b)
		}
		if len(held) != 20 {
			t.Fatalf("%d batches, want 20", len(held))
		}
		// A second epoch while the first is held must not touch it either.
		epoch(t, l, 1, 0)
		for k, b := range held {
			if got := copyBatch(l, b); !slices.EqualFunc(got.bufs, want[k].bufs, slices.Equal) {
				t.Fatalf("os_cache %v: held batch %d was overwritten", osCache, k)
			}
		}
		if st := l.Stats(); st.SlotsGrown == 0 || st.Slots < 20 {
			t.Fatalf("the ring did not grow: %+v", st)
		}
		it.Close()
		l.Close()
		if LiveSlots() <= base {
			t.Fatal("held slots were freed while still held")
		}
		for _, b := range held {
			b.Release()
		}
		if n := LiveSlots(); n != base {
			t.Fatalf("%d live slots after releasing everything, want %d", n, base)
		}
	}
}

// TestBatchMemoryLimit: holding batches beyond MaxBatchMemory is an error, not
// unbounded growth or a hang.
func TestBatchMemoryLimit(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 80, "raw")
	r := betontest.Open(t, path)
	cfg := baseConfig()
	cfg.BatchSize, cfg.BatchesAhead = 4, 0
	cfg.MaxBatchMemory = 6 * int64(4*(imgW*imgH*3+8+8))
	l := newLoader(t, r, cfg, imagePipeline)
	it, err := l.Start(0, 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var held []*Batch
	defer func() {
		for _, b := range held {
			b.Release()
		}
	}()
	failed := 0
	for calls := 0; ; calls++ {
		if calls > 40 {
			t.Fatal("Next never reached the end of the epoch")
		}
		b, err := it.Next()
		if err != nil {
			if !strings.Contains(err.Error(), "batch memory") {
				t.Fatalf("unexpected error %v", err)
			}
			// Every later batch fails the same way, then the epoch ends: no hang.
			failed++
			continue
		}
		if b == nil {
			break
		}
		held = append(held, b)
	}
	if failed == 0 || len(held)+failed != 20 {
		t.Fatalf("%d batches held, %d failed; want 20 in all with some failed", len(held), failed)
	}
}

// TestCloseMidEpoch: closing an iterator or its loader mid-epoch stops every
// goroutine, unblocks a waiting Next, and frees every slot once released.
func TestCloseMidEpoch(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 200, "jpg")
	r := betontest.Open(t, path)
	for _, tc := range []struct {
		name       string
		osCache    bool
		closeLoad  bool
		concurrent bool
	}{
		{"iterator", true, false, false},
		{"loader", true, true, false},
		{"iterator_process", false, false, false},
		{"loader_process", false, true, false},
		{"during_next", true, false, true},
		{"loader_during_next", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			goroutines, slots := runtime.NumGoroutine(), LiveSlots()
			cfg := baseConfig()
			cfg.BatchSize, cfg.Workers, cfg.OSCache = 3, 4, tc.osCache
			l, err := New(r, cfg, build(t, r, imagePipeline))
			if err != nil {
				t.Fatal(err)
			}
			it, err := l.Start(0, 0, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			first, err := it.Next()
			if err != nil || first == nil {
				t.Fatalf("first batch: %v, %v", first, err)
			}
			var wg sync.WaitGroup
			var nextErr error
			if tc.concurrent {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						b, err := it.Next()
						if err != nil || b == nil {
							nextErr = err
							return
						}
						b.Release()
					}
				}()
				time.Sleep(5 * time.Millisecond)
			}
			if tc.closeLoad {
				l.Close()
			} else {
				it.Close()
			}
			wg.Wait()
			if tc.concurrent && nextErr == nil {
				// The consumer may legitimately have finished the epoch first.
				t.Log("consumer reached the end before Close")
			}
			if _, err := it.Next(); err == nil && !tc.concurrent {
				t.Fatal("Next after Close gave no error")
			}
			// The batch handed out before Close is still valid.
			want := copyBatch(l, first)
			if !slices.Equal(want.bufs[1], first.Bufs[1][:8*first.N]) {
				t.Fatal("held batch changed")
			}
			first.Release()
			l.Close()
			l.Close()
			it.Close()
			settleGoroutines(t, goroutines)
			if n := LiveSlots(); n != slots {
				t.Fatalf("%d live slots, want %d", n, slots)
			}
		})
	}
}

// TestStartAfterClose: a closed loader refuses new epochs.
func TestStartAfterClose(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 10, "raw")
	r := betontest.Open(t, path)
	l := newLoader(t, r, baseConfig(), imagePipeline)
	l.Close()
	if it, err := l.Start(0, 0, nil, false); err == nil {
		it.Close()
		t.Fatal("Start on a closed loader succeeded")
	}
}

// TestStartAtBatch: starting at batch k gives the tail of the full epoch.
func TestStartAtBatch(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 45, "raw")
	r := betontest.Open(t, path)
	for _, dropLast := range []bool{true, false} {
		for _, osCache := range []bool{true, false} {
			cfg := baseConfig()
			cfg.DropLast, cfg.OSCache, cfg.Order = dropLast, osCache, "quasi_random"
			l := newLoader(t, r, cfg, imagePipeline)
			full := epoch(t, l, 2, 0)
			for k := 0; k <= len(full); k++ {
				sameEpochs(t, fmt.Sprintf("drop_last %v, os_cache %v, start %d", dropLast, osCache, k), full[k:], epoch(t, l, 2, k))
			}
			if _, err := l.Start(2, len(full)+1, nil, false); err == nil {
				t.Fatal("start past the end accepted")
			}
			if _, err := l.Start(2, -1, nil, false); err == nil {
				t.Fatal("negative start accepted")
			}
		}
	}
}

// TestSkipErrors corrupts samples in a copy of a JPEG file: garbage JPEG
// bytes, a pointer past the end of the file, a zero-size image. By default
// the first bad sample fails its batch with an error naming the file, the
// sample and the field; with SkipErrors the bad samples are left out and
// counted and every other sample arrives intact.
func TestSkipErrors(t *testing.T) {
	dir := t.TempDir()
	src := writeImages(t, dir, "images.beton", 40, "jpg")
	bad := map[uint64]string{3: "garbage", 10: "past EOF", 11: "garbage", 25: "zero width"}
	path := corruptCopy(t, src, dir, "corrupt.beton", func(r *beton.Reader, data []byte) {
		for id, how := range bad {
			col := columnOffset(r, id, 0)
			switch how {
			case "garbage":
				lo, hi := heapRange(t, r, id, 0)
				for k := lo; k < hi; k++ {
					data[k] = byte(k*131) ^ 0x5a
				}
			case "past EOF":
				binary.LittleEndian.PutUint64(data[col+5:], uint64(len(data))+12345)
			case "zero width":
				binary.LittleEndian.PutUint16(data[col+1:], 0)
			}
		}
	})
	r, clean := betontest.Open(t, path), betontest.Open(t, src)
	outputs := map[string][]string{"image": {`{"op":"rgb_center","size":[6,6],"ratio":1}`}, "label": {`{"op":"int"}`}}
	cfg := baseConfig()
	cfg.Order, cfg.BatchSize, cfg.DropLast = "sequential", 4, false

	// Without SkipErrors: errors name the file, sample and field.
	l := newLoader(t, r, cfg, outputs)
	it, err := l.Start(0, 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for {
		b, err := it.Next()
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if b == nil {
			break
		}
		b.Release()
	}
	it.Close()
	if len(errs) != 3 { // batches 0, 2 and 6
		t.Fatalf("%d failed batches, want 3: %q", len(errs), errs)
	}
	for k, id := range []uint64{3, 10, 25} {
		if e := errs[k]; !strings.Contains(e, path) || !strings.Contains(e, fmt.Sprintf("sample %d", id)) ||
			!strings.Contains(e, `"image"`) || strings.Contains(e, "internal error") {
			t.Errorf("error %q does not name %s, sample %d and field \"image\"", e, path, id)
		}
	}

	// With SkipErrors.
	for _, osCache := range []bool{true, false} {
		cfg.SkipErrors, cfg.OSCache = true, osCache
		l := newLoader(t, r, cfg, outputs)
		got := epoch(t, l, 0, 0)
		want := epoch(t, newLoader(t, clean, cfg, outputs), 0, 0)
		var ids []uint64
		for _, b := range got {
			ids = append(ids, b.ids()...)
		}
		var wantIDs []uint64
		wantPix := map[uint64][]byte{}
		for _, b := range want {
			for pos, id := range b.ids() {
				if _, isBad := bad[id]; !isBad {
					wantIDs = append(wantIDs, id)
				}
				wantPix[id] = b.bufs[0][pos*108 : (pos+1)*108]
			}
		}
		if !slices.Equal(ids, wantIDs) {
			t.Fatalf("os_cache %v: samples %v, want %v", osCache, ids, wantIDs)
		}
		for _, b := range got {
			for pos, id := range b.ids() {
				if !slices.Equal(b.bufs[0][pos*108:(pos+1)*108], wantPix[id]) {
					t.Fatalf("sample %d: pixels differ from the clean file", id)
				}
				if lab := binary.LittleEndian.Uint64(b.bufs[1][8*pos:]); lab != id {
					t.Fatalf("sample %d: label %d after compaction", id, lab)
				}
			}
		}
		if st := l.Stats(); st.SamplesSkipped != uint64(len(bad)) {
			t.Fatalf("os_cache %v: %d samples skipped, want %d", osCache, st.SamplesSkipped, len(bad))
		}
	}
}

// TestSkipWholeBatch: with SkipErrors a batch whose samples are all bad is
// passed over; the epoch goes on.
func TestSkipWholeBatch(t *testing.T) {
	dir := t.TempDir()
	src := writeImages(t, dir, "images.beton", 12, "jpg")
	path := corruptCopy(t, src, dir, "corrupt.beton", func(r *beton.Reader, data []byte) {
		for id := uint64(4); id < 8; id++ {
			lo, hi := heapRange(t, r, id, 0)
			clear(data[lo:hi])
		}
	})
	cfg := baseConfig()
	cfg.Order, cfg.BatchSize, cfg.SkipErrors = "sequential", 4, true
	l := newLoader(t, betontest.Open(t, path), cfg, map[string][]string{"image": {`{"op":"rgb_simple"}`}, "label": {`{"op":"int"}`}})
	got := epoch(t, l, 0, 0)
	if len(got) != 2 || !slices.Equal(got[0].ids(), []uint64{0, 1, 2, 3}) || !slices.Equal(got[1].ids(), []uint64{8, 9, 10, 11}) {
		t.Fatalf("batches %v", got)
	}
	if n := l.Stats().SamplesSkipped; n != 4 {
		t.Fatalf("%d skipped, want 4", n)
	}
}

// TestProcessCache: the process cache gives the OS cache's bytes and never
// holds more pages than its bound.
func TestProcessCache(t *testing.T) {
	path := writeBlobs(t, t.TempDir(), 48, 250_000) // about 8 samples per 2 MiB page
	r := betontest.Open(t, path)
	outputs := map[string][]string{"blob": {`{"op":"bytes"}`}, "label": {`{"op":"int"}`}}
	for _, order := range []string{"sequential", "random", "quasi_random"} {
		cfg := baseConfig()
		cfg.Order, cfg.BatchSize, cfg.Workers = order, 5, 3
		want := epoch(t, newLoader(t, r, cfg, outputs), 1, 0)
		for _, maxPages := range []int{1, 2, 3, 0} {
			cfg.OSCache, cfg.MaxResidentPages = false, maxPages
			l := newLoader(t, r, cfg, outputs)
			sameEpochs(t, fmt.Sprintf("%s, %d pages", order, maxPages), want, epoch(t, l, 1, 0))
			bound := int64(maxPages)
			if maxPages == 0 {
				bound = int64(l.cfg.MaxResidentPages)
			}
			if st := l.Stats(); st.PeakResidentPages < 1 || st.PeakResidentPages > bound || st.PagesRead == 0 {
				t.Fatalf("%s: stats %+v with at most %d resident pages", order, st, bound)
			}
		}
	}
	// Spot-check the bytes themselves.
	for _, b := range processEpoch(t, r, outputs) {
		per := len(b.bufs[0]) / len(b.ids())
		for pos, id := range b.ids() {
			w := blob(int(id), 250_000)
			row := b.bufs[0][pos*per : (pos+1)*per]
			if !slices.Equal(row[:len(w)], w) {
				t.Fatalf("sample %d: wrong blob", id)
			}
			if slices.ContainsFunc(row[len(w):], func(v byte) bool { return v != 0 }) {
				t.Fatalf("sample %d: padding not zero", id)
			}
		}
	}
}

func processEpoch(t *testing.T, r *beton.Reader, outputs map[string][]string) []copied {
	cfg := baseConfig()
	cfg.OSCache = false
	return epoch(t, newLoader(t, r, cfg, outputs), 0, 0)
}

// TestConcurrentIterators: several epochs of one loader and several loaders
// over one reader run at once and each gets its own correct data.
func TestConcurrentIterators(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 50, "jpg")
	r := betontest.Open(t, path)
	cfg := baseConfig()
	cfg.OSCache = false
	l := newLoader(t, r, cfg, imagePipeline)
	want := map[uint64][]copied{}
	for ep := uint64(0); ep < 4; ep++ {
		want[ep] = epoch(t, l, ep, 0)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for k := 0; k < 8; k++ {
		wg.Add(1)
		go func(ep uint64, own bool) {
			defer wg.Done()
			ll := l
			if own {
				var err error
				if ll, err = New(r, cfg, build(t, r, imagePipeline)); err != nil {
					errs <- err
					return
				}
				defer ll.Close()
			}
			it, err := ll.Start(ep, 0, nil, false)
			if err != nil {
				errs <- err
				return
			}
			defer it.Close()
			for i := 0; ; i++ {
				b, err := it.Next()
				if err != nil {
					errs <- err
					return
				}
				if b == nil {
					return
				}
				got := copyBatch(ll, b)
				b.Release()
				if !slices.EqualFunc(got.bufs, want[ep][i].bufs, slices.Equal) {
					errs <- fmt.Errorf("epoch %d batch %d differs", ep, i)
					return
				}
			}
		}(uint64(k%4), k >= 4)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestConfigErrors: bad settings are rejected when the loader is built.
func TestConfigErrors(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 5, "raw")
	r := betontest.Open(t, path)
	progs := build(t, r, imagePipeline)
	for _, cfg := range []Config{
		{BatchSize: 0, Order: "sequential"},
		{BatchSize: 1, BatchesAhead: -1, Order: "sequential"},
		{BatchSize: 1, Order: "shuffled"},
		{BatchSize: 1, Order: "sequential", Rank: 2, World: 2},
		{BatchSize: 1, Order: "sequential", Indices: []uint64{0, 5}},
	} {
		if _, err := New(r, cfg, progs); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	l := newLoader(t, r, Config{BatchSize: 2, Order: "sequential"}, imagePipeline)
	if _, err := l.Start(0, 0, []uint64{0, 9}, true); err == nil {
		t.Error("an order naming sample 9 of 5 was accepted")
	}
}

// TestConcurrentNext: several goroutines calling Next on one iterator get
// every batch exactly once, each intact.
func TestConcurrentNext(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 120, "raw")
	r := betontest.Open(t, path)
	cfg := baseConfig()
	cfg.BatchSize = 3
	l := newLoader(t, r, cfg, imagePipeline)
	want := epoch(t, l, 0, 0)
	for round := 0; round < 5; round++ {
		it, err := l.Start(0, 0, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		got := map[int]copied{}
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					b, err := it.Next()
					if err != nil || b == nil {
						if err != nil {
							t.Error(err)
						}
						return
					}
					c := copyBatch(l, b)
					b.Release()
					mu.Lock()
					if _, dup := got[c.index]; dup {
						t.Errorf("batch %d handed out twice", c.index)
					}
					got[c.index] = c
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		it.Close()
		if len(got) != len(want) {
			t.Fatalf("round %d: %d batches, want %d", round, len(got), len(want))
		}
		for k, w := range want {
			if !slices.EqualFunc(got[k].bufs, w.bufs, slices.Equal) {
				t.Fatalf("round %d: batch %d differs", round, k)
			}
		}
	}
}

// TestCloseRacesNext closes iterators at random moments while a consumer is
// inside Next: a batch Close has taken back must never be handed out (its
// slot would be reused or unmapped under the caller).
func TestCloseRacesNext(t *testing.T) {
	path := writeImages(t, t.TempDir(), "images.beton", 400, "raw")
	r := betontest.Open(t, path)
	cfg := baseConfig()
	cfg.BatchSize, cfg.Workers, cfg.BatchesAhead, cfg.Order = 2, 2, 4, "sequential"
	outputs := map[string][]string{"image": {`{"op":"rgb_simple"}`}, "label": {`{"op":"int"}`}}
	slots := LiveSlots()
	for round := 0; round < 300; round++ {
		l, err := New(r, cfg, build(t, r, outputs))
		if err != nil {
			t.Fatal(err)
		}
		it, err := l.Start(0, 0, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				b, err := it.Next()
				if err != nil || b == nil {
					return
				}
				for pos := 0; pos < b.N; pos++ {
					id := binary.LittleEndian.Uint64(b.Bufs[2][8*pos:])
					if lab := binary.LittleEndian.Uint64(b.Bufs[1][8*pos:]); lab != id {
						t.Errorf("round %d: batch %d holds label %d for sample %d", round, b.Index, lab, id)
					}
				}
				b.Release()
			}
		}()
		time.Sleep(time.Duration(round%40) * 50 * time.Microsecond)
		if round%2 == 0 {
			it.Close()
		} else {
			l.Close()
		}
		<-done
		l.Close()
		if t.Failed() {
			return
		}
	}
	if n := LiveSlots(); n != slots {
		t.Fatalf("%d live slots, want %d", n, slots)
	}
}

// TestCorruptBytesLength: one Bytes sample whose stored length is huge must
// fail alone, not inflate every sample's output to gigabytes.
func TestCorruptBytesLength(t *testing.T) {
	dir := t.TempDir()
	src := writeBlobs(t, dir, 10, 1000)
	path := corruptCopy(t, src, dir, "corrupt.beton", func(r *beton.Reader, data []byte) {
		binary.LittleEndian.PutUint64(data[columnOffset(r, 4, 0)+8:], 1<<30)
	})
	cfg := baseConfig()
	cfg.Order, cfg.BatchSize, cfg.SkipErrors = "sequential", 5, true
	l := newLoader(t, betontest.Open(t, path), cfg, map[string][]string{"blob": {`{"op":"bytes"}`}, "label": {`{"op":"int"}`}})
	if n := l.Outputs()[0].Bytes(); n > 2000 {
		t.Fatalf("a corrupt length made each sample %d bytes", n)
	}
	got := epoch(t, l, 0, 0)
	if len(got) != 2 || len(got[0].ids()) != 4 || l.Stats().SamplesSkipped != 1 {
		t.Fatalf("batches %v, stats %+v", got, l.Stats())
	}
}

// TestQuasiRandomReadsEachPageOnce: by default the process cache keeps
// QUASI_RANDOM's open pages resident, so an epoch reads every page once, as
// it exists to (here the window, 2 × 16 pages, covers a file of about 30
// pages, more than the workers' and read-ahead's share of residency).
func TestQuasiRandomReadsEachPageOnce(t *testing.T) {
	path := writeBlobs(t, t.TempDir(), 600, 100_000)
	r := betontest.Open(t, path)
	pages := map[int64]bool{}
	for i := range r.NumSamples() {
		pages[cache.PageOf(r, i)] = true
	}
	outputs := map[string][]string{"blob": {`{"op":"bytes"}`}, "label": {`{"op":"int"}`}}
	for _, tt := range []struct {
		name     string
		maxPages int
		once     bool
	}{
		{"default residency", 0, true},
		{"residency bounded below the window", 8, false},
	} {
		cfg := baseConfig()
		cfg.Order, cfg.BatchSize, cfg.OSCache, cfg.MaxResidentPages = "quasi_random", 16, false, tt.maxPages
		l := newLoader(t, r, cfg, outputs)
		epoch(t, l, 1, 0)
		st := l.Stats()
		if once := st.PagesRead == uint64(len(pages)); once != tt.once {
			t.Errorf("%s: %d page reads for %d pages (peak %d resident)", tt.name, st.PagesRead, len(pages), st.PeakResidentPages)
		}
	}
}

// TestIdlePBesideWorkers: while an epoch's workers run, GOMAXPROCS leaves one
// P idle beside them (see package procs), and goes back once they exit.
func TestIdlePBesideWorkers(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set in the environment")
	}
	r := betontest.Open(t, writeImages(t, t.TempDir(), "images.beton", 40, "jpg"))
	cfg := baseConfig()
	cfg.Workers = procs.CPUs() + 1
	l := newLoader(t, r, cfg, imagePipeline)
	it, err := l.Start(0, 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := runtime.GOMAXPROCS(0), cfg.Workers+1; got != want {
		t.Errorf("during the epoch: GOMAXPROCS %d, want %d for %d workers", got, want, cfg.Workers)
	}
	b, err := it.Next()
	if err != nil || b == nil {
		t.Fatalf("first batch: %v, %v", b, err)
	}
	b.Release()
	it.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GOMAXPROCS(0) != procs.CPUs() {
		if time.Now().After(deadline) {
			t.Fatalf("after the epoch: GOMAXPROCS %d, want %d", runtime.GOMAXPROCS(0), procs.CPUs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSequentialContiguous: FFCV-SSL's SEQUENTIAL_CONTIGUOUS gives rank r
// positions [r*m, (r+1)*m) of the indices padded from their head to m*world
// (its DistributedSamplerProxy), where SEQUENTIAL strides.
func TestSequentialContiguous(t *testing.T) {
	r := betontest.Open(t, writeImages(t, t.TempDir(), "images.beton", 7, "raw"))
	for _, c := range []struct {
		order       string
		rank, world int
		want        []uint64
	}{
		{"sequential_contiguous", 0, 1, []uint64{0, 1, 2, 3, 4, 5, 6}},
		{"sequential_contiguous", 0, 2, []uint64{0, 1, 2, 3}},
		{"sequential_contiguous", 1, 2, []uint64{4, 5, 6, 0}},
		{"sequential_contiguous", 2, 3, []uint64{6, 0, 1}},
		{"sequential_contiguous", 3, 4, []uint64{6, 0}},
		{"sequential", 1, 2, []uint64{1, 3, 5, 0}},
	} {
		cfg := baseConfig()
		cfg.Order, cfg.BatchSize, cfg.DropLast, cfg.Rank, cfg.World = c.order, 1, false, c.rank, c.world
		l := newLoader(t, r, cfg, imagePipeline)
		var got []uint64
		for _, b := range epoch(t, l, 0, 0) {
			got = append(got, b.ids()...)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s, rank %d of %d: %v, want %v", c.order, c.rank, c.world, got, c.want)
		}
	}
}
