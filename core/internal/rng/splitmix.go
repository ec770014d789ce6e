// Package rng holds SplitMix64, the one hash the core derives its random
// keys and seeds with (orders' passes, pipeline operations, clip starts).
package rng

// Golden is SplitMix64's increment, 2^64 over the golden ratio.
const Golden = 0x9e3779b97f4a7c15

// Mix is SplitMix64's finaliser: a bijection that spreads nearby inputs
// over the whole range.
func Mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// SplitMix64 is the output of SplitMix64 whose state before the step is x:
// SplitMix64(0), SplitMix64(Golden), ... is the generator's sequence from 0.
func SplitMix64(x uint64) uint64 { return Mix(x + Golden) }
