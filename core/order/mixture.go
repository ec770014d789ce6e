package order

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/ffcv-go/ffcv-go/core/internal/rng"
)

// Part is one source of a mixture: the samples [Start, Start+Size) of the
// dataset the sources are read as, of which every epoch takes Take.
//
// A part is read as an endless stream of passes, each pass a permutation
// of its samples of its own, drawn from the seed, the part's index and the
// pass's number. Epoch e takes positions [e*Take, (e+1)*Take) of that
// stream: within an epoch no sample repeats until the part is exhausted, an
// upsampled part (Take > Size) starts a freshly shuffled pass, and a
// downsampled one (Take < Size) goes on where the previous epoch stopped,
// so every sample is read before any is read again.
type Part struct {
	Start, Size, Take uint64
}

// Mix returns the global order of an epoch of a mixture: every part's
// Take samples of the epoch (see Part), combined by the order name
// ("sequential", "random", "quasi_random"):
//
//   - sequential concatenates the parts, each in its stream's order, which
//     is the samples' own order (pass after pass);
//   - random shuffles the epoch's samples of all parts together with
//     Random(·, seed+epoch); a pass is a uniform permutation, so a partial
//     pass is a uniform random subset;
//   - quasi_random orders them with QuasiRandom(·, pageOf, window,
//     seed+epoch), so page locality holds across the parts; a pass visits
//     the part's pages in random order (QuasiRandom with one page open), so
//     a partial pass takes whole pages, and an epoch reads each page it
//     needs about once.
//
// Random and quasi_random see the epoch's samples sorted by id, so a
// mixture whose parts are taken once each (Take == Size) has the same order
// as the single dataset they are read as. Mix is a pure function of its
// arguments.
func Mix(parts []Part, name string, pageOf func(id uint64) uint32, window int, seed, epoch uint64) ([]uint64, error) {
	switch name {
	case "sequential", "random", "quasi_random":
	default:
		return nil, fmt.Errorf("unknown order %q", name)
	}
	var total uint64
	for k, p := range parts {
		if p.Size == 0 && p.Take > 0 {
			return nil, fmt.Errorf("part %d has no samples to take %d from", k, p.Take)
		}
		if hi, lo := bits.Mul64(epoch+1, p.Take); hi != 0 || lo > 1<<62 {
			return nil, fmt.Errorf("part %d: epoch %d of %d samples each is past 2^62 samples", k, epoch, p.Take)
		}
		total += p.Take
	}
	if total > 1<<40 {
		return nil, errors.New("an epoch of more than 2^40 samples")
	}
	out := make([]uint64, 0, total)
	for k, p := range parts {
		if name == "sequential" {
			for _, s := range p.segments(epoch) {
				for i := s.lo; i < s.hi; i++ {
					out = append(out, p.Start+i)
				}
			}
			continue
		}
		out = p.sorted(out, k, name, pageOf, seed, epoch)
	}
	switch name {
	case "random":
		shuffle(newPCG64(seed+epoch), out)
	case "quasi_random":
		out = QuasiRandom(out, pageOf, window, seed+epoch)
	}
	return out, nil
}

// segment is positions [lo, hi) of pass number pass of a part's stream.
type segment struct{ pass, lo, hi uint64 }

// segments are the passes (whole or in part) epoch takes of p's stream, in
// stream order: at most one partial pass at each end.
func (p Part) segments(epoch uint64) []segment {
	var out []segment
	for pos, end := epoch*p.Take, (epoch+1)*p.Take; pos < end; {
		pass, lo := pos/p.Size, pos%p.Size
		hi := min(p.Size, lo+(end-pos))
		out = append(out, segment{pass, lo, hi})
		pos += hi - lo
	}
	return out
}

// sorted appends to out the samples epoch takes of p (part number k), each
// as often as it is taken, in increasing id order.
func (p Part) sorted(out []uint64, k int, name string, pageOf func(uint64) uint32, seed, epoch uint64) []uint64 {
	var whole uint64
	var partial [2][]uint64 // bitsets of the samples of the partial passes
	for _, s := range p.segments(epoch) {
		if s.lo == 0 && s.hi == p.Size {
			whole++
			continue
		}
		set := make([]uint64, (p.Size+63)/64)
		for _, id := range p.pass(k, s.pass, name, pageOf, seed)[s.lo:s.hi] {
			i := id - p.Start
			set[i/64] |= 1 << (i % 64)
		}
		if partial[0] == nil {
			partial[0] = set
		} else {
			partial[1] = set
		}
	}
	for i := range p.Size {
		n := whole
		for _, set := range partial {
			if set != nil {
				n += set[i/64] >> (i % 64) & 1
			}
		}
		for ; n > 0; n-- {
			out = append(out, p.Start+i)
		}
	}
	return out
}

// pass is permutation number pass of part k's samples: a Random
// permutation, or for quasi_random a QuasiRandom one with one page open
// (pages in random order, each page's samples shuffled), drawn with a seed
// of its own.
func (p Part) pass(k int, pass uint64, name string, pageOf func(uint64) uint32, seed uint64) []uint64 {
	ids := make([]uint64, p.Size)
	for i := range ids {
		ids[i] = p.Start + uint64(i)
	}
	s := passSeed(seed, k, pass)
	if name == "quasi_random" {
		return QuasiRandom(ids, pageOf, 1, s)
	}
	shuffle(newPCG64(s), ids)
	return ids
}

// passSeed keys the permutation of pass number pass of part k.
func passSeed(seed uint64, k int, pass uint64) uint64 {
	return rng.SplitMix64(rng.SplitMix64(seed^0x6d69787475726573+uint64(k)) + pass)
}
