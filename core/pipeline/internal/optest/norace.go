//go:build !race

package optest

// RaceEnabled: see race.go.
const RaceEnabled = false
