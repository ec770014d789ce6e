package loader

import (
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/order"
)

// TestElasticResume runs an epoch's first batches at world 4, then the rest
// at world 3 from what order.Remaining says is left: each sample once, for
// every order (QUASI_RANDOM and SEQUENTIAL_CONTIGUOUS cut in blocks, the
// others strided).
func TestElasticResume(t *testing.T) {
	const n, bs, taken = 61, 3, 2
	r := betontest.Open(t, writeImages(t, t.TempDir(), "images.beton", n, "raw"))
	for _, name := range []string{"sequential", "sequential_contiguous", "random", "quasi_random"} {
		t.Run(name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Order, cfg.BatchSize, cfg.DropLast, cfg.World = name, bs, false, 4
			seen := map[uint64]bool{}
			var global []uint64
			var layout order.Layout
			for rank := range 4 {
				cfg.Rank = rank
				l := newLoader(t, r, cfg, imagePipeline)
				var err error
				if global, err = l.GlobalOrder(2); err != nil {
					t.Fatal(err)
				}
				layout = l.Layout()
				for _, b := range epoch(t, l, 2, 0)[:taken] {
					for _, id := range b.ids() {
						seen[id] = true
					}
				}
			}
			want := map[string]order.Layout{"quasi_random": order.Blocked, "sequential_contiguous": order.Blocked}[name]
			if want == "" {
				want = order.Strided
			}
			if layout != want {
				t.Fatalf("layout %q", layout)
			}
			rest, err := order.Remaining(global, []order.Stage{{Layout: layout, World: 4, BatchSize: bs, Batches: taken}})
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			cfg.World = 3
			for rank := range 3 {
				cfg.Rank = rank
				l := newLoader(t, r, cfg, imagePipeline)
				it, err := l.Start(2, 0, l.Resume(rest), true)
				if err != nil {
					t.Fatal(err)
				}
				for b, err := it.Next(); b != nil || err != nil; b, err = it.Next() {
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, copyBatch(l, b).ids()...)
					b.Release()
				}
				it.Close()
			}
			for _, id := range got {
				if seen[id] {
					t.Fatalf("sample %d seen before the resume and again after", id)
				}
				seen[id] = true
			}
			if len(seen) != n || len(got) != len(rest) || !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(rest))) {
				t.Fatalf("%d samples seen in all, %d after the resume of %d left", len(seen), len(got), len(rest))
			}
		})
	}
	if _, err := newLoader(t, r, baseConfig(), imagePipeline).GlobalOrderAs(0, "zigzag", 0); err == nil {
		t.Fatal("unknown order accepted")
	}
}
