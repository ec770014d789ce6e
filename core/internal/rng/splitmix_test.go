package rng

import "testing"

// The generator's first outputs from state 0, as in the reference
// implementation (Vigna's splitmix64.c).
func TestSplitMix64Sequence(t *testing.T) {
	for k, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f, 0xf88bb8a8724c81ec} {
		if got := SplitMix64(uint64(k) * Golden); got != want {
			t.Errorf("output %d = %#x, want %#x", k, got, want)
		}
	}
}
