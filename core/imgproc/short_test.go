package imgproc

import "testing"

// draws is how many random cases a sweep takes: n, or a tenth of it under
// -short, which the quick arm64 run passes because emulation is about ten
// times slower. The fixed cases of each sweep (edges, the policies'
// factors) run in full either way.
func draws(n int) int {
	if testing.Short() {
		return max(1, n/10)
	}
	return n
}
