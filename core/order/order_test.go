package order

import (
	"fmt"
	"slices"
	"testing"
)

// sameMultiset reports whether a and b hold the same values the same
// number of times.
func sameMultiset(a, b []uint64) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// padded is order repeated from its head to length total, the list
// DistributedSampler pads to.
func padded(order []uint64, total int) []uint64 {
	out := make([]uint64, total)
	for i := range out {
		out[i] = order[i%len(order)]
	}
	return out
}

var propertySizes = []int{0, 1, 2, 3, 5, 10, 17, 64, 1000}

var propertyKinds = []string{"range", "spread", "dup"}

func TestSequential(t *testing.T) {
	for _, kind := range propertyKinds {
		in := makeIndices(kind, 10)
		got := Sequential(in)
		if !slices.Equal(got, in) {
			t.Errorf("%s: got %v, want %v", kind, got, in)
		}
		if len(got) > 0 {
			got[0]++
			if got[0] == in[0] {
				t.Errorf("%s: result aliases the input", kind)
			}
		}
	}
}

func TestRandomIsPermutation(t *testing.T) {
	for _, kind := range propertyKinds {
		for _, n := range propertySizes {
			in := makeIndices(kind, n)
			keep := slices.Clone(in)
			got := Random(in, uint64(n))
			if !sameMultiset(got, in) {
				t.Errorf("%s/n=%d: not a permutation", kind, n)
			}
			if !slices.Equal(in, keep) {
				t.Errorf("%s/n=%d: input modified", kind, n)
			}
		}
	}
}

// TestDistributeProperties checks, for every world size and for n both
// smaller and not divisible by it, that ranks get equal shares whose union
// is the padded order.
func TestDistributeProperties(t *testing.T) {
	cuts := map[string]func([]uint64, int, int) []uint64{
		"Distribute": Distribute,
		"Block":      Block,
	}
	for name, cut := range cuts {
		for _, kind := range propertyKinds {
			for _, n := range propertySizes {
				for world := 1; world <= 4; world++ {
					t.Run(fmt.Sprintf("%s/%s/n=%d/W=%d", name, kind, n, world), func(t *testing.T) {
						order := Random(makeIndices(kind, n), 1)
						per := (n + world - 1) / world
						var all []uint64
						for r := range world {
							got := cut(order, r, world)
							if len(got) != per {
								t.Fatalf("rank %d: %d samples, want %d", r, len(got), per)
							}
							all = append(all, got...)
						}
						if n == 0 {
							return
						}
						if !sameMultiset(all, padded(order, per*world)) {
							t.Errorf("ranks do not partition the padded order")
						}
					})
				}
			}
		}
	}
}

func TestBlockIsContiguous(t *testing.T) {
	order := makeIndices("spread", 10)
	want := [][]uint64{order[0:3], order[3:6], order[6:9], {order[9], order[0], order[1]}}
	for r, w := range want {
		if got := Block(order, r, 4); !slices.Equal(got, w) {
			t.Errorf("rank %d: got %v, want %v", r, got, w)
		}
	}
}

func TestRankPanics(t *testing.T) {
	for _, c := range []struct{ rank, world int }{{0, 0}, {-1, 2}, {2, 2}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("rank %d world %d: no panic", c.rank, c.world)
				}
			}()
			Distribute([]uint64{1, 2, 3}, c.rank, c.world)
		}()
	}
}
