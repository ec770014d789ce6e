package order

import (
	"slices"
	"strings"
	"testing"
)

// durationsOf makes n durations of a kind: "speech" (1-20, skewed short as
// utterances are), "equal", or "frames" (integers 1600-320000).
func durationsOf(kind string, n int) []float64 {
	g := newPCG64(uint64(n) + 7)
	out := make([]float64, n)
	for i := range out {
		switch kind {
		case "speech":
			u := float64(g.Uint64()>>11) / (1 << 53)
			out[i] = 1 + 19*u*u
		case "equal":
			out[i] = 2.5
		case "frames":
			out[i] = float64(1600 + g.interval(320000-1600))
		}
	}
	return out
}

func idsFrom(n int, offset uint64) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = offset + 3*uint64(i) // not 0..n-1: ids and positions differ
	}
	return ids
}

var bucketCases = []struct {
	name string
	kind string
	n    int
	b    Bucketing
}{
	{"empty", "speech", 0, Bucketing{MaxDuration: 30, MaxBatch: 8, NumBuckets: 4}},
	{"one", "speech", 1, Bucketing{MaxDuration: 30, MaxBatch: 8, NumBuckets: 4}},
	{"speech", "speech", 1000, Bucketing{MaxDuration: 60, MaxBatch: 64, NumBuckets: 10}},
	{"one bucket", "speech", 300, Bucketing{MaxDuration: 45, MaxBatch: 64, NumBuckets: 1}},
	{"max batch binds", "speech", 500, Bucketing{MaxDuration: 1000, MaxBatch: 5, NumBuckets: 6}},
	{"equal durations", "equal", 101, Bucketing{MaxDuration: 10, MaxBatch: 64, NumBuckets: 8}},
	{"exact fit", "equal", 40, Bucketing{MaxDuration: 2.5, MaxBatch: 64, NumBuckets: 3}},
	{"frames", "frames", 777, Bucketing{MaxDuration: 16000 * 40, MaxBatch: 32, NumBuckets: 30}},
}

func batchTotal(durs map[uint64]float64) func([]uint64) float64 {
	return func(b []uint64) float64 {
		var t float64
		for _, id := range b {
			t += durs[id]
		}
		return t
	}
}

func TestBucketedBatches(t *testing.T) {
	for _, c := range bucketCases {
		t.Run(c.name, func(t *testing.T) {
			ids, durs := idsFrom(c.n, 5), durationsOf(c.kind, c.n)
			if err := c.b.Check(ids, durs); err != nil {
				t.Fatal(err)
			}
			byID := map[uint64]float64{}
			for i, id := range ids {
				byID[id] = durs[i]
			}
			bounds := BucketBounds(durs, c.b.NumBuckets)
			for epoch := range uint64(3) {
				batches := Bucketed(ids, durs, c.b, 42, epoch)
				var all []uint64
				for _, b := range batches {
					if len(b) == 0 || len(b) > c.b.MaxBatch {
						t.Fatalf("epoch %d: a batch of %d samples (max %d)", epoch, len(b), c.b.MaxBatch)
					}
					if tot := batchTotal(byID)(b); tot > c.b.MaxDuration {
						t.Fatalf("epoch %d: batch total %v > max_duration %v", epoch, tot, c.b.MaxDuration)
					}
					for _, id := range b[1:] {
						if bucketOf(bounds, byID[id]) != bucketOf(bounds, byID[b[0]]) {
							t.Fatalf("epoch %d: batch %v mixes buckets", epoch, b)
						}
					}
					all = append(all, b...)
				}
				if !sameMultiset(all, ids) {
					t.Fatalf("epoch %d: %d samples in the batches, not each of the %d once", epoch, len(all), len(ids))
				}
			}
		})
	}
}

func TestBucketedDeterministic(t *testing.T) {
	ids, durs := idsFrom(400, 0), durationsOf("speech", 400)
	b := Bucketing{MaxDuration: 50, MaxBatch: 32, NumBuckets: 8}
	a := Bucketed(ids, durs, b, 7, 3)
	if !slices.EqualFunc(a, Bucketed(ids, durs, b, 7, 3), slices.Equal) {
		t.Fatal("the same (seed, epoch) gave other batches")
	}
	for _, other := range [][2]uint64{{7, 4}, {8, 3}} {
		if slices.EqualFunc(a, Bucketed(ids, durs, b, other[0], other[1]), slices.Equal) {
			t.Errorf("seed %d epoch %d gave the batches of seed 7 epoch 3", other[0], other[1])
		}
	}
}

func TestBucketBounds(t *testing.T) {
	cases := []struct {
		durs []float64
		k    int
		want []float64
	}{
		{[]float64{1, 1, 1, 1, 4, 4}, 2, []float64{4}},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 3, []float64{7, 10}},
		{[]float64{3, 3, 3, 3}, 4, []float64(nil)}, // one value: one bucket
		{[]float64{5, 1}, 1, []float64(nil)},
		{nil, 5, []float64(nil)},
	}
	for _, c := range cases {
		if got := BucketBounds(c.durs, c.k); !slices.Equal(got, c.want) {
			t.Errorf("BucketBounds(%v, %d) = %v, want %v", c.durs, c.k, got, c.want)
		}
	}
	// Buckets hold about equal total duration: within one longest sample.
	durs := durationsOf("speech", 5000)
	bounds := BucketBounds(durs, 10)
	if len(bounds) != 9 {
		t.Fatalf("%d bounds for 10 buckets", len(bounds))
	}
	totals := make([]float64, 10)
	var sum float64
	for _, d := range durs {
		totals[bucketOf(bounds, d)] += d
		sum += d
	}
	for k, tot := range totals[:9] { // the last bucket takes what is left
		if tot < sum/10 || tot > sum/10+20 {
			t.Errorf("bucket %d holds %v of %v", k, tot, sum)
		}
	}
}

func TestBucketingCheck(t *testing.T) {
	ids := []uint64{10, 11, 12}
	cases := []struct {
		b    Bucketing
		durs []float64
		want string
	}{
		{Bucketing{30, 4, 2}, []float64{1, 40, 2}, "sample 11 has duration 40, more than max_duration 30"},
		{Bucketing{30, 4, 2}, []float64{1, -1, 2}, "sample 11 has duration -1"},
		{Bucketing{0, 4, 2}, []float64{1, 1, 2}, "max_duration 0 must be a positive"},
		{Bucketing{30, 4, 0}, []float64{1, 1, 2}, "num_buckets 0 must be positive"},
		{Bucketing{30, 4, 2}, []float64{1, 30, 2}, ""},
	}
	for _, c := range cases {
		err := c.b.Check(ids, c.durs)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%+v, %v) = %v, want %q", c.b, c.durs, err, c.want)
		}
	}
}

// dealt is every rank's batches of global.
func dealt(global [][]uint64, dur func([]uint64) float64, world int, dropLast bool) [][][]uint64 {
	out := make([][][]uint64, world)
	for r := range out {
		out[r] = DealBatches(global, dur, r, world, dropLast, true)
	}
	return out
}

func TestDealBatches(t *testing.T) {
	ids, durs := idsFrom(2000, 0), durationsOf("speech", 2000)
	byID := map[uint64]float64{}
	for i, id := range ids {
		byID[id] = durs[i]
	}
	dur := batchTotal(byID)
	b := Bucketing{MaxDuration: 60, MaxBatch: 64, NumBuckets: 10}
	global := Bucketed(ids, durs, b, 1, 0)
	for _, world := range []int{1, 2, 3, 7, 8} {
		for _, dropLast := range []bool{false, true} {
			ranks := dealt(global, dur, world, dropLast)
			steps := len(global) / world
			if !dropLast && len(global)%world != 0 {
				steps++
			}
			seen := map[int]int{}
			index := map[*uint64]int{}
			for i, g := range global {
				index[&g[0]] = i
			}
			lo, hi := 1e300, 0.0
			for r, bs := range ranks {
				if len(bs) != steps {
					t.Fatalf("world %d drop %v: rank %d has %d batches, want %d", world, dropLast, r, len(bs), steps)
				}
				var tot float64
				for _, x := range bs {
					seen[index[&x[0]]]++
					tot += dur(x)
				}
				lo, hi = min(lo, tot), max(hi, tot)
			}
			// Every batch of the whole steps once; padding repeats only the head.
			for i := range global {
				want := 1
				if i >= steps*world {
					want = 0
				} else if i < steps*world-len(global) {
					want = 2
				}
				if seen[i] != want {
					t.Fatalf("world %d drop %v: batch %d dealt %d times, want %d", world, dropLast, i, seen[i], want)
				}
			}
			// The stated bound: totals differ by at most one batch (<= max_duration).
			if hi-lo > b.MaxDuration {
				t.Errorf("world %d drop %v: rank totals %v..%v differ by more than %v", world, dropLast, lo, hi, b.MaxDuration)
			}
		}
	}
}

// TestDealBatchesUnpadded: without padding (a resumed epoch's rest) every
// batch is dealt once; the last step's go to some ranks, one batch more.
func TestDealBatchesUnpadded(t *testing.T) {
	global := make([][]uint64, 11)
	for i := range global {
		global[i] = []uint64{uint64(i)}
	}
	dur := func(b []uint64) float64 { return float64(b[0]%4 + 1) }
	for _, world := range []int{1, 2, 3, 4, 11, 13} {
		var all []uint64
		for r := range world {
			bs := DealBatches(global, dur, r, world, false, false)
			for _, b := range bs {
				all = append(all, b...)
			}
			if want := (len(global) + world - 1) / world; len(bs) != want && len(bs) != want-1 {
				t.Errorf("world %d: rank %d has %d batches, want %d or one fewer", world, r, len(bs), want)
			}
		}
		if !sameMultiset(all, []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
			t.Errorf("world %d: dealt %v", world, all)
		}
	}
}

// TestBucketedElastic resumes an epoch at another world size: the batches
// every rank takes over both runs are every global batch exactly once.
func TestBucketedElastic(t *testing.T) {
	ids, durs := idsFrom(900, 0), durationsOf("speech", 900)
	byID := map[uint64]float64{}
	for i, id := range ids {
		byID[id] = durs[i]
	}
	dur := batchTotal(byID)
	global := Bucketed(ids, durs, Bucketing{MaxDuration: 40, MaxBatch: 16, NumBuckets: 6}, 3, 2)
	cases := []struct {
		w1, k1, w2, k2, w3 int
	}{
		{4, 5, 2, 0, 0},
		{2, 9, 3, 0, 0},
		{1, 17, 5, 0, 0},
		{3, 4, 4, 3, 2},
		{2, 0, 3, 0, 0},
	}
	for _, c := range cases {
		stages := []Stage{{Layout: Batched, World: c.w1, BatchSize: 16, Batches: c.k1}}
		var got []uint64
		rest := global
		take := func(world, k int, ranks [][][]uint64) {
			for _, bs := range ranks {
				for _, b := range bs[:k] {
					got = append(got, b...)
				}
			}
		}
		take(c.w1, c.k1, dealt(rest, dur, c.w1, false))
		worlds := [][2]int{{c.w2, c.k2}}
		if c.w3 > 0 {
			worlds = append(worlds, [2]int{c.w3, -1})
		} else {
			worlds[0][1] = -1
		}
		for _, wk := range worlds {
			n, err := BatchesTaken(len(global), stages)
			if err != nil {
				t.Fatal(err)
			}
			rest = global[n:]
			ranks := dealt(rest, dur, wk[0], true)
			k := wk[1]
			if k < 0 { // the last run finishes the epoch
				k = len(ranks[0])
			}
			take(wk[0], k, ranks)
			stages = append(stages, Stage{Layout: Rest, World: wk[0], BatchSize: 16, DropLast: true, Batches: k})
		}
		n, _ := BatchesTaken(len(global), stages)
		for _, b := range global[n:] { // what drop_last left: fewer batches than ranks
			got = append(got, b...)
		}
		if last := worlds[len(worlds)-1][0]; len(global)-n >= last {
			t.Errorf("%+v: %d batches left over %d ranks", c, len(global)-n, last)
		}
		if !sameMultiset(got, ids) {
			t.Errorf("%+v: %d samples over the runs, not each of the %d once", c, len(got), len(ids))
		}
	}
	if _, err := BatchesTaken(len(global), []Stage{{Layout: Strided, World: 2, Batches: 1}}); err == nil {
		t.Error("a strided stage was taken for a bucketed epoch")
	}
	if _, err := BatchesTaken(len(global), []Stage{{Layout: Batched, World: 2, Batches: len(global)}}); err == nil {
		t.Error("more batches than the epoch has were taken")
	}
}
