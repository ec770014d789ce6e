package order

// Distribute returns the part of order that rank reads out of world ranks,
// exactly as torch.utils.data.DistributedSampler(drop_last=False) splits
// the list it iterates over: every rank gets ceil(n/world) samples, the
// list is padded to that many times world by repeating it from its head
// (cyclically, when the padding exceeds n), and rank r takes positions
// r, r+world, r+2*world, ...
//
// For FFCV's distributed SEQUENTIAL order pass the indices themselves; for
// its distributed RANDOM order pass indices permuted by
// torch.randperm(len(indices), generator=manual_seed(seed+epoch)).
//
// It panics unless 0 <= rank < world.
func Distribute(order []uint64, rank, world int) []uint64 {
	checkRank(rank, world)
	n := len(order)
	per := perRank(n, world)
	out := make([]uint64, per)
	for i := range out {
		out[i] = order[(rank+i*world)%n]
	}
	return out
}

// Block is the contiguous counterpart of Distribute: order is padded the
// same way, but rank r takes positions [r*m, (r+1)*m) with m =
// ceil(n/world). Contiguous blocks keep whatever locality order has.
//
// It panics unless 0 <= rank < world.
func Block(order []uint64, rank, world int) []uint64 {
	checkRank(rank, world)
	n := len(order)
	per := perRank(n, world)
	out := make([]uint64, per)
	for i := range out {
		out[i] = order[(rank*per+i)%n]
	}
	return out
}

// perRank is DistributedSampler's num_samples without drop_last.
func perRank(n, world int) int {
	return (n + world - 1) / world
}

func checkRank(rank, world int) {
	if world < 1 || rank < 0 || rank >= world {
		panic("order: rank must satisfy 0 <= rank < world")
	}
}
