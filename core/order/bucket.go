package order

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/ffcv-go/ffcv-go/core/internal/rng"
)

// Bucketing is how Bucketed batches samples by duration, in the manner of
// lhotse's DynamicBucketingSampler. Durations are in any unit (seconds,
// frames, tokens); MaxDuration is in the same unit.
type Bucketing struct {
	// MaxDuration bounds a batch's total duration.
	MaxDuration float64
	// MaxBatch bounds a batch's number of samples (the loader's slot size).
	MaxBatch int
	// NumBuckets is the number of duration buckets (at least 1).
	NumBuckets int
}

// Check refuses settings no batch can be formed with, and durations that
// are not finite and non-negative or that would not fit a batch alone: a
// sample longer than MaxDuration is an error rather than a batch over the
// bound (a memory budget, as lhotse's warning batch is) or a silently
// dropped sample. durations[i] is sample ids[i]'s.
func (b Bucketing) Check(ids []uint64, durations []float64) error {
	if !(b.MaxDuration > 0) || math.IsInf(b.MaxDuration, 0) {
		return fmt.Errorf("max_duration %v must be a positive number", b.MaxDuration)
	}
	if b.MaxBatch < 1 {
		return fmt.Errorf("the batch size bound %d must be positive", b.MaxBatch)
	}
	if b.NumBuckets < 1 {
		return fmt.Errorf("num_buckets %d must be positive", b.NumBuckets)
	}
	longest := -1
	for i, d := range durations {
		if !(d >= 0) || math.IsInf(d, 0) {
			return fmt.Errorf("sample %d has duration %v: durations must be finite and non-negative", ids[i], d)
		}
		if longest < 0 || d > durations[longest] {
			longest = i
		}
	}
	if longest >= 0 && durations[longest] > b.MaxDuration {
		return fmt.Errorf("sample %d has duration %v, more than max_duration %v: raise max_duration to at "+
			"least the longest duration, or leave such samples out (indices=)", ids[longest], durations[longest],
			b.MaxDuration)
	}
	return nil
}

// BucketBounds estimates the upper bounds of numBuckets duration buckets
// as lhotse's estimate_duration_buckets does: over the sorted durations,
// a bucket closes once it holds more than its share (total / numBuckets)
// of the total duration, so each bucket holds about equal total duration,
// not an equal number of samples. A duration d falls in the bucket
// numbered by the bounds <= d. There are at most numBuckets-1 bounds, fewer
// when durations repeat (no bucket is left empty by a repeated bound).
func BucketBounds(durations []float64, numBuckets int) []float64 {
	sorted := slices.Sorted(slices.Values(durations))
	var total float64
	for _, d := range sorted {
		total += d
	}
	share := total / float64(max(numBuckets, 1))
	var bounds []float64
	var acc float64
	for _, d := range sorted {
		if acc > share && len(bounds) < numBuckets-1 && d > sorted[0] &&
			(len(bounds) == 0 || d > bounds[len(bounds)-1]) {
			bounds = append(bounds, d)
			acc = 0
		}
		acc += d
	}
	return bounds
}

// bucketOf is the bucket of duration d under bounds.
func bucketOf(bounds []float64, d float64) int {
	return sort.Search(len(bounds), func(i int) bool { return bounds[i] > d })
}

// Bucketed returns an epoch's batches: ids put into the duration buckets of
// BucketBounds, shuffled within each bucket, each bucket cut greedily into
// batches of total duration at most MaxDuration and at most MaxBatch
// samples, and all batches shuffled across buckets. durations[i] is sample
// ids[i]'s. The result depends only on (ids, durations, b, seed, epoch);
// every id is in exactly one batch. Call Check first: a sample over
// MaxDuration still gets a batch of its own here.
func Bucketed(ids []uint64, durations []float64, b Bucketing, seed, epoch uint64) [][]uint64 {
	bounds := BucketBounds(durations, b.NumBuckets)
	buckets := make([][]int, len(bounds)+1) // positions into ids
	for i, d := range durations {
		k := bucketOf(bounds, d)
		buckets[k] = append(buckets[k], i)
	}
	g := newPCG64(rng.SplitMix64(rng.SplitMix64(seed^0x6275636b65746564) + epoch))
	var out [][]uint64
	for _, bucket := range buckets {
		shuffle(g, bucket)
		var cur []uint64
		var total float64
		for _, i := range bucket {
			d := durations[i]
			if len(cur) > 0 && (total+d > b.MaxDuration || len(cur) >= b.MaxBatch) {
				out = append(out, cur)
				cur, total = nil, 0
			}
			cur = append(cur, ids[i])
			total += d
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
	}
	shuffle(g, out)
	return out
}

// DealBatches returns rank's batches of global, batches dealt out one step
// of world consecutive batches at a time, so that every rank gets the same
// number. Within a step the longest batch goes to the rank with the least
// total duration so far, the next longest to the next, and so on: then no
// two ranks' totals ever differ by more than the longest batch (at most
// MaxDuration), where a round robin (batch i to rank i % world) lets them
// drift apart by the buckets' short last batches. A last step of
// fewer than world batches is dropped with dropLast; else, with pad, it is
// filled with batches repeated from the head of global (as
// DistributedSampler pads), and without pad (the rest of a resumed epoch,
// which must not repeat samples) its batches go to the ranks with the
// least duration, the others getting one batch fewer. dur gives a batch's
// total duration.
//
// It panics unless 0 <= rank < world.
func DealBatches(global [][]uint64, dur func([]uint64) float64, rank, world int, dropLast, pad bool) [][]uint64 {
	checkRank(rank, world)
	n := len(global)
	steps := n / world
	if !dropLast && n%world != 0 {
		steps++
	}
	totals := make([]float64, world)
	ranks := make([]int, world)
	pos := make([]int, world)
	durs := make([]float64, world)
	out := make([][]uint64, 0, steps)
	for s := range steps {
		m := world // batches in this step
		if !pad {
			m = min(world, n-s*world)
		}
		for j := range world {
			ranks[j], pos[j] = j, j
			if j < m {
				durs[j] = dur(global[(s*world+j)%n])
			}
		}
		step := pos[:m]
		// Ranks by total (then number), batches by duration, longest first
		// (then position): the same on every rank.
		sort.SliceStable(ranks, func(a, b int) bool { return totals[ranks[a]] < totals[ranks[b]] })
		sort.SliceStable(step, func(a, b int) bool { return durs[step[a]] > durs[step[b]] })
		for j := range m {
			totals[ranks[j]] += durs[step[j]]
			if ranks[j] == rank {
				out = append(out, global[(s*world+step[j])%n])
			}
		}
	}
	return out
}

// BatchesTaken is how many batches of an epoch's global batch list the
// stages took: every stage took Batches steps of World batches from what
// the stages before it left (the first stage Batched, later ones Rest,
// batches being dealt the same way at any world size). A last step short
// of World batches (padded, or a rank short) counts as taking the rest.
// Batches is a rank's with the most batches (rank 0's). n is the number of
// global batches.
func BatchesTaken(n int, stages []Stage) (int, error) {
	taken := 0
	for k, s := range stages {
		if s.World < 1 || s.Batches < 0 {
			return 0, fmt.Errorf("stage %d: world %d and batches %d must be positive", k, s.World, s.Batches)
		}
		if want := map[bool]Layout{true: Batched, false: Rest}[k == 0]; s.Layout != want {
			return 0, fmt.Errorf("stage %d: layout %q: a bucketed epoch's first stage is %q, later ones %q",
				k, s.Layout, Batched, Rest)
		}
		left := n - taken
		steps := left / s.World
		if !s.DropLast && left%s.World != 0 {
			steps++
		}
		if s.Batches > steps {
			return 0, fmt.Errorf("stage %d: %d batches taken, but the %d batches left over %d ranks make %d steps",
				k, s.Batches, left, s.World, steps)
		}
		taken += min(s.Batches*s.World, left)
	}
	return taken, nil
}
