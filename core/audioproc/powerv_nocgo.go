//go:build !cgo

package audioproc

// Without cgo every frame goes through the Go transform.
const maxLanes = 1

var lanes = 1

type planV struct{}

func newPlanV(*RFFT) *planV { return nil }

func (*planV) power(_ []float32, _ *[maxLanes]int, _, _, _, _, _, _ []float64) {
	panic("audioproc: powerv.c without cgo")
}

func (*planV) mel(_ []float32, _ *[maxLanes]int, _, _, _, _, _ []float64, _ *MelBank, _ []float64) {
	panic("audioproc: powerv.c without cgo")
}
