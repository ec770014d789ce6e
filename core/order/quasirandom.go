package order

import "slices"

// QuasiRandom returns a permutation of indices that keeps reads local to a
// few heap pages at a time, following FFCV's OrderOption.QUASI_RANDOM:
// samples are grouped by the page pageOf assigns them, each page's samples
// are shuffled, pages are visited in a random order with window pages open
// at once (FFCV uses twice the batch size), and every next sample comes from
// a uniformly chosen open page. A page that runs out is closed and the next
// page in the order is opened.
//
// The order is deterministic in seed (pass seed+epoch for a new order every
// epoch) but is not FFCV's own stream, which comes from numba's generator.
// An id listed twice in indices appears twice in the result. Time is
// O(n log n) at worst and memory O(n) for n = len(indices).
//
// It panics if window < 1.
func QuasiRandom(indices []uint64, pageOf func(id uint64) uint32, window int, seed uint64) []uint64 {
	if window < 1 {
		panic("order: QuasiRandom window must be at least 1")
	}
	n := len(indices)
	pages, numPages := densePages(indices, pageOf)

	// Group the samples by page (CSR layout: page p owns
	// grouped[start[p]:start[p+1]]).
	start := make([]int, numPages+1)
	for _, p := range pages {
		start[p+1]++
	}
	for p := range numPages {
		start[p+1] += start[p]
	}
	cur := slices.Clone(start[:numPages])
	grouped := make([]uint64, n)
	for i, id := range indices {
		p := pages[i]
		grouped[cur[p]] = id
		cur[p]++
	}

	rng := newPCG64(seed)
	order := pages[:0] // pages is no longer needed; reuse its memory
	for p := range numPages {
		if start[p+1] > start[p] {
			shuffle(rng, grouped[start[p]:start[p+1]])
			order = append(order, uint32(p))
		}
	}
	shuffle(rng, order)

	copy(cur, start)
	open := make([]uint32, 0, min(window, len(order)))
	out := make([]uint64, n)
	next := 0
	for k := range out {
		for next < len(order) && len(open) < window {
			open = append(open, order[next])
			next++
		}
		i := int(rng.interval(uint64(len(open) - 1)))
		p := open[i]
		out[k] = grouped[cur[p]]
		cur[p]++
		if cur[p] == start[p+1] {
			// Closing order within the window does not matter: picks are
			// uniform over open pages.
			last := len(open) - 1
			open[i] = open[last]
			open = open[:last]
		}
	}
	return out
}

// QuasiRandomDistributed is QuasiRandom for rank out of world ranks, which
// FFCV does not offer. Every rank computes the same global QuasiRandom
// order from the shared seed and reads its own contiguous stretch of it,
// as Block cuts it: the order is padded to ceil(n/world)*world by repeating
// its head, and rank r takes [r*m, (r+1)*m) with m = ceil(n/world).
// Contiguous stretches, rather than DistributedSampler's striding, keep each
// rank's reads within few pages. All ranks get the same number of samples
// and are disjoint apart from the padding.
//
// It panics if window < 1 or unless 0 <= rank < world.
func QuasiRandomDistributed(indices []uint64, pageOf func(id uint64) uint32, window int, seed uint64, rank, world int) []uint64 {
	checkRank(rank, world)
	return Block(QuasiRandom(indices, pageOf, window, seed), rank, world)
}

// densePages returns the page of every index, renumbered 0..numPages-1 in
// increasing page order. Page numbers that are small next to n index a
// counting array directly (unused numbers just become empty pages);
// sparse ones are compacted by sorting.
func densePages(indices []uint64, pageOf func(id uint64) uint32) (pages []uint32, numPages int) {
	pages = make([]uint32, len(indices))
	var maxPage uint32
	for i, id := range indices {
		pages[i] = pageOf(id)
		maxPage = max(maxPage, pages[i])
	}
	if len(pages) == 0 {
		return pages, 0
	}
	if uint64(maxPage) < 2*uint64(len(pages))+1024 {
		return pages, int(maxPage) + 1
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(pages)))
	for i, p := range pages {
		j, _ := slices.BinarySearch(distinct, p)
		pages[i] = uint32(j)
	}
	return pages, len(distinct)
}
