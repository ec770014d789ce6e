package pipeline

import "math/rand/v2"

// Batch operations need the whole batch (mixup mixes sample i with sample
// i-1), so they run once per batch after every sample is decoded.

// BatchOp is an operation on a whole batch of n samples.
type BatchOp interface {
	Out(in Spec) (Spec, error)
	RunBatch(b *BatchCtx, in, out []byte, n int) error
}

// BatchCtx identifies a batch for its randomness.
type BatchCtx struct {
	Seed, Epoch uint64
	Index       uint64 // batch index in the epoch
}

// Rand returns a generator for the batch's draws: a pure function of
// (seed, epoch, batch index, stream). Operations that must draw alike (image
// and label mixup) use the same stream.
func (b *BatchCtx) Rand(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(mix(b.Seed, b.Epoch), mix(b.Index, stream)))
}
