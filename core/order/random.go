package order

// Random returns the permutation of indices that
// numpy.random.default_rng(seed).permutation(indices) returns, which is
// FFCV's OrderOption.RANDOM order. FFCV seeds each epoch with seed+epoch;
// the caller does that addition. The result is a fresh slice.
func Random(indices []uint64, seed uint64) []uint64 {
	out := Sequential(indices)
	shuffle(newPCG64(seed), out)
	return out
}
