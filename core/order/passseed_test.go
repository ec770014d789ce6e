package order

import "testing"

// Pass seeds are part of every mixture order: pinned, so a change to the
// hash behind them shows.
func TestPassSeedGolden(t *testing.T) {
	for _, tc := range []struct {
		seed uint64
		k    int
		pass uint64
		want uint64
	}{
		{0, 0, 0, 0x5b22c4207f15e8e8},
		{42, 1, 0, 0x726c474bacb42a9c},
		{42, 1, 7, 0x54518bd29e438308},
		{1 << 63, 3, 1 << 40, 0x40051ba0931d9d4c},
	} {
		if got := passSeed(tc.seed, tc.k, tc.pass); got != tc.want {
			t.Errorf("passSeed(%d, %d, %d) = %#x, want %#x", tc.seed, tc.k, tc.pass, got, tc.want)
		}
	}
}
