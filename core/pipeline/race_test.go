//go:build race

package pipeline

// raceEnabled: the race detector makes sync.Pool drop a share of what is put
// back, by design, so allocation counts mean nothing under it.
const raceEnabled = true
