package order

// Constants of numpy's SeedSequence (numpy/random/bit_generator.pyx).
const (
	ssPoolSize = 4
	ssInitA    = 0x43b0d7e5
	ssMultA    = 0x931e8875
	ssInitB    = 0x8b51f9dd
	ssMultB    = 0x58f38ded
	ssMixMultL = 0xca01f9dd
	ssMixMultR = 0x4973f715
	ssXShift   = 16 // 4 bytes * 8 bits / 2
)

// seedSequence is numpy.random.SeedSequence(seed) for a non-negative
// integer seed with no spawn key, reduced to the entropy pool it builds.
type seedSequence struct {
	pool [ssPoolSize]uint32
}

// newSeedSequence mixes seed into the pool exactly as numpy does, so that
// generateState reproduces numpy's output bit for bit.
func newSeedSequence(seed uint64) seedSequence {
	// numpy splits an integer into 32-bit words, least significant first,
	// and represents 0 as the single word [0].
	entropy := []uint32{uint32(seed)}
	if seed>>32 != 0 {
		entropy = append(entropy, uint32(seed>>32))
	}

	var s seedSequence
	hashConst := uint32(ssInitA)
	hashmix := func(v uint32) uint32 {
		v ^= hashConst
		hashConst *= ssMultA
		v *= hashConst
		return v ^ v>>ssXShift
	}
	mix := func(x, y uint32) uint32 {
		r := ssMixMultL*x - ssMixMultR*y
		return r ^ r>>ssXShift
	}

	for i := range s.pool {
		var v uint32 // the pool outgrows the entropy: keep hashing zeros
		if i < len(entropy) {
			v = entropy[i]
		}
		s.pool[i] = hashmix(v)
	}
	// Let late pool words influence early ones.
	for src := range s.pool {
		for dst := range s.pool {
			if src != dst {
				s.pool[dst] = mix(s.pool[dst], hashmix(s.pool[src]))
			}
		}
	}
	// A uint64 seed has at most two words, never more than the pool, so
	// numpy's "remaining entropy" loop has nothing to do here.
	return s
}

// generateState64 is SeedSequence.generate_state(n, numpy.uint64): 2n
// 32-bit words hashed from the pool, paired little-endian.
func (s seedSequence) generateState64(n int) []uint64 {
	words := make([]uint32, 2*n)
	hashConst := uint32(ssInitB)
	for i := range words {
		v := s.pool[i%ssPoolSize]
		v ^= hashConst
		hashConst *= ssMultB
		v *= hashConst
		words[i] = v ^ v>>ssXShift
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(words[2*i]) | uint64(words[2*i+1])<<32
	}
	return out
}
