package order

import (
	"encoding/binary"
	"fmt"
	"hash/crc64"
)

// Layout is how a run cuts an epoch's order into the lists of its ranks.
type Layout string

const (
	// Strided is Distribute: the global order padded by repeating its
	// head, rank r taking positions r, r+world, ...
	Strided Layout = "strided"
	// Blocked is Block: the padded global order in contiguous blocks.
	Blocked Layout = "block"
	// Rest is Resume: what earlier runs left of the epoch, in contiguous
	// stretches with equal batch counts and no padding.
	Rest Layout = "rest"
	// Batched is DealBatches: a bucketed epoch's global batches dealt out
	// a step of world batches at a time (see BatchesTaken).
	Batched Layout = "batches"
)

// Stage is one run's progress through an epoch: how it cut its order, its
// world size, batch size and drop_last, and the batches every rank had
// taken when it saved (training is synchronous, so all ranks had taken the
// same number).
type Stage struct {
	Layout    Layout `json:"layout"`
	World     int    `json:"world"`
	BatchSize int    `json:"batch_size"`
	DropLast  bool   `json:"drop_last"`
	Batches   int    `json:"batches"`
}

// Remaining returns the samples of an epoch's global order that stages
// did not visit, in global order. The first stage cuts global itself
// (Strided or Blocked, padded as Distribute and Block pad); every later
// stage is a resumed run (Rest) that cut what its predecessors left. A
// position counts as visited when any rank read it or one of its padding
// copies, so a sample seen once as padding is not handed out again.
func Remaining(global []uint64, stages []Stage) ([]uint64, error) {
	n := len(global)
	seen := make([]bool, n)
	rest := make([]int, n) // positions into global not yet visited
	for i := range rest {
		rest[i] = i
	}
	for k, s := range stages {
		if s.World < 1 || s.BatchSize < 1 || s.Batches < 0 {
			return nil, fmt.Errorf("stage %d: world %d, batch size %d and batches %d must be positive",
				k, s.World, s.BatchSize, s.Batches)
		}
		if (k == 0) == (s.Layout == Rest) || (s.Layout != Rest && s.Layout != Strided && s.Layout != Blocked) {
			return nil, fmt.Errorf("stage %d: layout %q: the first stage must be %q or %q, later ones %q",
				k, s.Layout, Strided, Blocked, Rest)
		}
		if k == 0 {
			per := perRank(n, s.World)
			if nb := batches(per, s.BatchSize, s.DropLast); s.Batches > nb {
				return nil, fmt.Errorf("stage 0: %d batches taken, but an epoch of %d samples over %d ranks "+
					"has %d batches of %d", s.Batches, n, s.World, nb, s.BatchSize)
			}
			took := min(s.Batches*s.BatchSize, per)
			for r := range s.World {
				for j := range took {
					p := r + j*s.World
					if s.Layout == Blocked {
						p = r*per + j
					}
					seen[p%n] = true
				}
			}
		} else {
			lengths := restLengths(len(rest), s.World, s.BatchSize, s.DropLast)
			if nb := batches(lengths[0], s.BatchSize, s.DropLast); s.Batches > nb {
				return nil, fmt.Errorf("stage %d: %d batches taken, but the %d samples left over %d ranks "+
					"make %d batches of %d", k, s.Batches, len(rest), s.World, nb, s.BatchSize)
			}
			start := 0
			for _, length := range lengths {
				for _, p := range rest[start : start+min(s.Batches*s.BatchSize, length)] {
					seen[p] = true
				}
				start += length
			}
		}
		kept := rest[:0]
		for _, p := range rest {
			if !seen[p] {
				kept = append(kept, p)
			}
		}
		rest = kept
	}
	out := make([]uint64, len(rest))
	for i, p := range rest {
		out[i] = global[p]
	}
	return out, nil
}

// Resume returns rank's part of rest, the samples left of an epoch, for a
// run of world ranks taking batches of batchSize: contiguous stretches in
// rank order, none repeated. Every rank gets the same number of batches:
// with dropLast, rest is cut into whole steps of world*batchSize samples
// and the incomplete last step (fewer than world*batchSize samples) is
// left out, as drop_last leaves out an epoch's tail; without it, the last
// step's samples are spread as evenly as they go, so the last batches
// differ by at most one sample, and if that step has fewer samples than
// ranks, the ranks past them get one batch fewer.
//
// It panics unless 0 <= rank < world and batchSize >= 1.
func Resume(rest []uint64, rank, world, batchSize int, dropLast bool) []uint64 {
	checkRank(rank, world)
	if batchSize < 1 {
		panic("order: Resume batch size must be at least 1")
	}
	lengths := restLengths(len(rest), world, batchSize, dropLast)
	start := 0
	for _, length := range lengths[:rank] {
		start += length
	}
	return append([]uint64(nil), rest[start:start+lengths[rank]]...)
}

// restLengths are the list lengths Resume gives each rank for m samples.
func restLengths(m, world, batchSize int, dropLast bool) []int {
	step := world * batchSize
	out := make([]int, world)
	last := m % step
	if dropLast {
		last = 0
	}
	for r := range out {
		out[r] = m/step*batchSize + last/world
		if r < last%world {
			out[r]++
		}
	}
	return out
}

// batches is the number of batches a list of n samples makes.
func batches(n, batchSize int, dropLast bool) int {
	if dropLast {
		return n / batchSize
	}
	return (n + batchSize - 1) / batchSize
}

// Fingerprint identifies an order (CRC-64/ECMA of its ids, little-endian):
// a resumed run checks that it rebuilt the epoch order the saving run had.
func Fingerprint(global []uint64) uint64 {
	h := crc64.New(crcTable)
	buf := make([]byte, 8*min(len(global), 1<<16))
	for len(global) > 0 {
		k := min(len(global), len(buf)/8)
		for i, id := range global[:k] {
			binary.LittleEndian.PutUint64(buf[8*i:], id)
		}
		h.Write(buf[:8*k])
		global = global[k:]
	}
	return h.Sum64()
}

var crcTable = crc64.MakeTable(crc64.ECMA)
