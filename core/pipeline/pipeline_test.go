package pipeline

import (
	"fmt"
	"slices"
	"testing"
)

func TestCtxRandDeterministic(t *testing.T) {
	draws := func(c *Ctx, op int) []uint64 {
		r := c.Rand(op)
		return []uint64{r.Uint64(), r.Uint64(), r.Uint64()}
	}
	a, b := NewCtx(), NewCtx()
	for _, k := range []struct{ seed, epoch, pos uint64 }{{0, 0, 0}, {1, 0, 0}, {1, 2, 3}, {1, 2, 1 << 40}} {
		a.Seed, a.Epoch, a.Pos = k.seed, k.epoch, k.pos
		// b has seen other samples first: history must not matter.
		b.Seed, b.Epoch, b.Pos = 99, 99, 99
		draws(b, 1)
		b.Seed, b.Epoch, b.Pos = k.seed, k.epoch, k.pos
		for op := 0; op < 4; op++ {
			x, y := draws(a, op), draws(b, op)
			if !slices.Equal(x, y) {
				t.Fatalf("%+v op %d: %v != %v", k, op, x, y)
			}
			if z := draws(a, op); !slices.Equal(x, z) {
				t.Fatalf("%+v op %d: a second Rand gave %v, then %v", k, op, x, z)
			}
		}
	}
	// Different operations, positions, epochs and seeds draw differently.
	key := func(seed, epoch, pos uint64, op int) uint64 {
		a.Seed, a.Epoch, a.Pos = seed, epoch, pos
		return a.Rand(op).Uint64()
	}
	seen := map[uint64]string{}
	for seed := uint64(0); seed < 3; seed++ {
		for epoch := uint64(0); epoch < 3; epoch++ {
			for pos := uint64(0); pos < 20; pos++ {
				for op := 0; op < 3; op++ {
					v := key(seed, epoch, pos, op)
					name := fmt.Sprint(seed, epoch, pos, op)
					if prev, dup := seen[v]; dup {
						t.Fatalf("keys %s and %s draw the same value", prev, name)
					}
					seen[v] = name
				}
			}
		}
	}
}
