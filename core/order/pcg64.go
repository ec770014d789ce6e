package order

import "math/bits"

// PCG's default 128-bit LCG multiplier,
// 2549297995355413924<<64 + 4865540595714422341.
const (
	pcgMultHi = 2549297995355413924
	pcgMultLo = 4865540595714422341
)

// pcg64 is numpy.random.PCG64: a 128-bit LCG with the XSL-RR output
// function, plus numpy's buffering of 32-bit draws.
type pcg64 struct {
	stateHi, stateLo uint64
	incHi, incLo     uint64
	hasUint32        bool
	uinteger         uint32
}

// newPCG64 seeds the generator as numpy.random.PCG64(seed) does: four
// words from SeedSequence(seed) become initstate and initseq of PCG's
// srandom, each word pair read high word first.
func newPCG64(seed uint64) *pcg64 {
	st := newSeedSequence(seed).generateState64(4)
	g := &pcg64{}
	// inc = initseq<<1 | 1
	g.incHi = st[2]<<1 | st[3]>>63
	g.incLo = st[3]<<1 | 1
	g.step()
	var carry uint64
	g.stateLo, carry = bits.Add64(g.stateLo, st[1], 0)
	g.stateHi, _ = bits.Add64(g.stateHi, st[0], carry)
	g.step()
	return g
}

// step advances the LCG: state = state*mult + inc (mod 2^128).
func (g *pcg64) step() {
	hi, lo := bits.Mul64(g.stateLo, pcgMultLo)
	hi += g.stateHi*pcgMultLo + g.stateLo*pcgMultHi
	var carry uint64
	g.stateLo, carry = bits.Add64(lo, g.incLo, 0)
	g.stateHi, _ = bits.Add64(hi, g.incHi, carry)
}

// Uint64 steps first and then outputs XSL-RR of the new state, as PCG's
// pcg_setseq_128_xsl_rr_64_random_r does.
func (g *pcg64) Uint64() uint64 {
	g.step()
	return bits.RotateLeft64(g.stateHi^g.stateLo, -int(g.stateHi>>58))
}

// Uint32 returns the low half of a fresh 64-bit draw and keeps the high
// half for the next call, like numpy's pcg64_next32.
func (g *pcg64) Uint32() uint32 {
	if g.hasUint32 {
		g.hasUint32 = false
		return g.uinteger
	}
	v := g.Uint64()
	g.hasUint32 = true
	g.uinteger = uint32(v >> 32)
	return uint32(v)
}

// interval returns a uniform value in [0, limit] by masked rejection,
// drawing 32 bits when limit fits in them, exactly like numpy's random_interval. The
// choice of draw width matters: it decides how the buffered half-words are
// consumed, and so the whole stream.
func (g *pcg64) interval(limit uint64) uint64 {
	if limit == 0 {
		return 0
	}
	mask := limit
	mask |= mask >> 1
	mask |= mask >> 2
	mask |= mask >> 4
	mask |= mask >> 8
	mask |= mask >> 16
	mask |= mask >> 32
	if limit <= 0xffffffff {
		m := uint32(mask)
		for {
			if v := uint64(g.Uint32() & m); v <= limit {
				return v
			}
		}
	}
	for {
		if v := g.Uint64() & mask; v <= limit {
			return v
		}
	}
}

// shuffle is numpy's Generator.shuffle on a 1-D array: Fisher–Yates from
// the end, j = random_interval(i).
//
// The swap targets do not depend on the data, so they are drawn a block at
// a time: the swap loop is then free of the rejection loop's unpredictable
// branches and the CPU overlaps its cache misses, which dominate on large
// arrays.
func shuffle[T any](g *pcg64, x []T) {
	var js [256]uint64
	for hi := len(x) - 1; hi > 0; {
		k := min(hi, len(js))
		for b := range k {
			js[b] = g.interval(uint64(hi - b))
		}
		for b := range k {
			i, j := hi-b, js[b]
			x[i], x[j] = x[j], x[i]
		}
		hi -= k
	}
}
