package order

// PagesTouched returns how many distinct pages, on average, a stretch of
// span consecutive samples of order touches, cutting order into such
// stretches (the last one possibly shorter). With span a batch size it
// measures pages per batch; with several batches it measures the working
// set a loader needs, which is where QuasiRandom's window pays off. Fewer
// pages means fewer, larger reads. It returns 0 for an empty order and
// panics if span < 1.
func PagesTouched(order []uint64, pageOf func(id uint64) uint32, span int) float64 {
	if span < 1 {
		panic("order: PagesTouched span must be at least 1")
	}
	if len(order) == 0 {
		return 0
	}
	seen := make(map[uint32]struct{}, span)
	total, stretches := 0, 0
	for lo := 0; lo < len(order); lo += span {
		clear(seen)
		for _, id := range order[lo:min(lo+span, len(order))] {
			seen[pageOf(id)] = struct{}{}
		}
		total += len(seen)
		stretches++
	}
	return float64(total) / float64(stretches)
}
