package policy

import (
	"math"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// tables hold the Color (saturation) and Sharpness tables of the factors an
// op can draw, by the factor's bits: built with the op, then only read by
// its workers, so they take no lock and share nothing with other ops. Each
// fill costs as much as a 224×224 blend, which the op then pays once, not
// per image.
type tables struct {
	sat   map[uint64]*imgproc.SaturationTable // nil for a factor that takes the float steps
	sharp map[uint64]*imgproc.SharpenTable
}

// maxTables bounds each kind's tables of an op (64 KiB each): the factors
// of bins beyond it fill a pooled table per use, with the same result.
const maxTables = 64

func newTables() *tables {
	return &tables{sat: map[uint64]*imgproc.SaturationTable{}, sharp: map[uint64]*imgproc.SharpenTable{}}
}

// add builds op's table of factor f, if op has tables.
func (t *tables) add(op int, f float64) {
	k := math.Float64bits(f)
	switch op {
	case opColor:
		if _, ok := t.sat[k]; !ok && len(t.sat) < maxTables {
			t.sat[k] = imgproc.NewSaturationTable(f)
		}
	case opSharpness:
		if _, ok := t.sharp[k]; !ok && len(t.sharp) < maxTables {
			t.sharp[k] = imgproc.NewSharpenTable(f)
		}
	}
}

// addBin adds op's factors in bin i of bins of space s: 1 ± the magnitude,
// as an op's sign is drawn.
func (t *tables) addBin(s space, op, i, bins int) {
	if op != opColor && op != opSharpness {
		return
	}
	m, _ := s.magnitude(op, i, bins, 0, 0) // an enhancement's does not depend on the size
	t.add(op, 1+m)
	t.add(op, 1-m) // 1 + (-m), as applyAug computes it, exactly
}

func (t *tables) saturation(f float64) *imgproc.SaturationTable {
	if t == nil {
		return nil
	}
	return t.sat[math.Float64bits(f)]
}

func (t *tables) sharpen(f float64) *imgproc.SharpenTable {
	if t == nil {
		return nil
	}
	return t.sharp[math.Float64bits(f)]
}
