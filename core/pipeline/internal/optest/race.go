//go:build race

package optest

// RaceEnabled: the race detector makes sync.Pool drop a share of what is
// put back, by design, so allocation counts mean nothing under it.
const RaceEnabled = true
