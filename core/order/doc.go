// Package order decides which sample ids a training epoch visits and in
// which order, reproducing the traversal orders of FFCV 1.0.
//
// Sequential and Random match FFCV exactly: Random returns the same
// permutation as numpy.random.default_rng(seed).permutation(indices), so a
// Go loader and a Python FFCV loader given the same seed visit samples in
// the same order. Distribute reproduces torch's DistributedSampler
// (drop_last=False) applied to a given order.
//
// QuasiRandom follows FFCV's QUASI_RANDOM idea (shuffle within heap pages,
// keep a window of pages open) but uses its own deterministic stream, and
// QuasiRandomDistributed extends it to several ranks, which FFCV does not
// support.
//
// Bucketed batches by total duration, as lhotse's DynamicBucketingSampler:
// its batches are dealt to the ranks whole (DealBatches), and BatchesTaken
// resumes them elastically.
//
// Remaining and Resume make resumption elastic: from what runs at some
// world size took of an epoch's global order, the samples left, cut over
// another world size with none repeated.
//
// All functions are pure: they never modify their inputs and return fresh
// slices.
package order
