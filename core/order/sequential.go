package order

// Sequential returns the indices in their given order, as FFCV's
// OrderOption.SEQUENTIAL does. The result is a copy.
func Sequential(indices []uint64) []uint64 {
	return append([]uint64(nil), indices...)
}
