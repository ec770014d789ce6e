package order

import (
	"slices"
	"testing"
)

// distributeRef transcribes DistributedSampler.__iter__ (drop_last=False)
// over a given list.
func distributeRef(order []uint64, rank, world int) []uint64 {
	n := len(order)
	total := (n + world - 1) / world * world
	indices := slices.Clone(order)
	padding := total - n
	if padding <= n {
		indices = append(indices, indices[:padding]...)
	} else {
		var rep []uint64
		for range (padding + n - 1) / n {
			rep = append(rep, order...)
		}
		indices = append(indices, rep[:padding]...)
	}
	var out []uint64
	for i := rank; i < total; i += world {
		out = append(out, indices[i])
	}
	return out
}

func FuzzDistribute(f *testing.F) {
	f.Add(uint16(0), uint8(1), uint64(0))
	f.Add(uint16(1), uint8(4), uint64(1))
	f.Add(uint16(3), uint8(8), uint64(2))
	f.Add(uint16(10), uint8(3), uint64(3))
	f.Add(uint16(1001), uint8(7), uint64(4))
	f.Fuzz(func(t *testing.T, n uint16, w uint8, seed uint64) {
		world := int(w%16) + 1
		order := Random(makeIndices("dup", int(n)), seed)
		per := (int(n) + world - 1) / world
		var all []uint64
		for r := range world {
			got := Distribute(order, r, world)
			if want := distributeRef(order, r, world); !slices.Equal(got, want) {
				t.Fatalf("rank %d of %d: got %v, DistributedSampler %v", r, world, got, want)
			}
			if len(got) != per {
				t.Fatalf("rank %d of %d: %d samples, want %d", r, world, len(got), per)
			}
			all = append(all, got...)
		}
		if n > 0 && !sameMultiset(all, padded(order, per*world)) {
			t.Fatalf("ranks do not partition the padded order")
		}
	})
}

func FuzzQuasiRandom(f *testing.F) {
	f.Add(uint16(0), uint16(1), uint8(1), uint64(0), uint8(1))
	f.Add(uint16(1), uint16(1), uint8(3), uint64(1), uint8(2))
	f.Add(uint16(100), uint16(7), uint8(2), uint64(2), uint8(3))
	f.Add(uint16(1000), uint16(0), uint8(16), uint64(3), uint8(4))
	f.Add(uint16(999), uint16(1000), uint8(255), uint64(4), uint8(5))
	f.Fuzz(func(t *testing.T, n, pageSize uint16, w uint8, seed uint64, world uint8) {
		window := int(w%64) + 1
		worlds := int(world%8) + 1
		// Ids repeat and arrive in a scrambled order; a page size of 0
		// scatters pages over the uint32 range.
		in := Random(makeIndices("dup", int(n)), seed^0x5eed)
		pageOf := sparsePages
		if pageSize > 0 {
			pageOf = perPage(uint64(pageSize))
		}
		got := QuasiRandom(in, pageOf, window, seed)
		if !sameMultiset(got, in) {
			t.Fatalf("not a permutation")
		}
		if m := maxOpen(got, pageOf); m > window {
			t.Fatalf("%d pages open at once, window %d", m, window)
		}
		var all []uint64
		for r := range worlds {
			all = append(all, QuasiRandomDistributed(in, pageOf, window, seed, r, worlds)...)
		}
		per := (int(n) + worlds - 1) / worlds
		if n > 0 && !sameMultiset(all, padded(got, per*worlds)) {
			t.Fatalf("ranks do not partition the padded order")
		}
	})
}
