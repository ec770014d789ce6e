package pipeline

import "testing"

// The seeds of every random operation derive from mix: pinned, so a change
// to the hash behind them shows.
func TestMixGolden(t *testing.T) {
	for _, tc := range []struct{ a, b, want uint64 }{
		{0, 0, 0x6db6ca64564daeaa},
		{1, 2, 0x30883360cc68d7b1},
		{1 << 63, 1<<64 - 1, 0xd7ea0228afa64a5d},
	} {
		if got := mix(tc.a, tc.b); got != tc.want {
			t.Errorf("mix(%d, %d) = %#x, want %#x", tc.a, tc.b, got, tc.want)
		}
	}
}
