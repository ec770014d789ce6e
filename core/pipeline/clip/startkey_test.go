package clip_test

import (
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline/clip"
)

// Clip starts draw under StartKey: pinned, so a change to the hash behind
// it shows.
func TestStartKeyGolden(t *testing.T) {
	for _, tc := range []struct{ key, want int }{
		{0, -0x1ddf57c684e23251},
		{3, 0x1d0b14e4db018fed},
		{-1, -0x1b268e88e49ad3e0},
	} {
		if got := clip.StartKey(tc.key); got != tc.want {
			t.Errorf("StartKey(%d) = %#x, want %#x", tc.key, got, tc.want)
		}
	}
}
