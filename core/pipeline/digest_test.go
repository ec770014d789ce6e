package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"
)

// floatOpsDigest is the SHA-256 of floatOpsOutputs on x86-64. The random
// crops, grey levels and MixUp's Beta draws are float arithmetic that every
// machine must do alike (a batch is the same on x86-64 and arm64); a
// different digest on arm64 means the compiler fused a multiply and an add
// there. After a deliberate change, take the new digest from x86-64.
const floatOpsDigest = "579b1a1e269b3efffeacf566fa16c247bed5bc19ffd9bebd1766d1190a6630a1"

func floatOpsOutputs() []byte {
	rng := rand.New(rand.NewPCG(21, 22))
	h := sha256.New()
	put := func(v uint64) { h.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	for i := 0; i < 4000; i++ {
		w, hgt := 16+rng.IntN(2000), 16+rng.IntN(2000)
		c := RandomResizedCrop(rng, w, hgt, [2]float64{0.08, 1}, [2]float64{3.0 / 4, 4.0 / 3})
		put(uint64(c.Min.X)<<48 | uint64(c.Min.Y)<<32 | uint64(c.Max.X)<<16 | uint64(c.Max.Y))
	}
	for i := 0; i < 20000; i++ {
		r, g, b := byte(rng.UintN(256)), byte(rng.UintN(256)), byte(rng.UintN(256))
		put(math.Float64bits(gray(r, g, b)))
		put(math.Float64bits(blendGray(r, g, b)))
	}
	for _, a := range []float64{0.2, 0.5, 1, 2.5} {
		for i := 0; i < 2000; i++ {
			put(math.Float64bits(Gamma(rng, a)))
		}
	}
	return h.Sum(nil)
}

func TestFloatOpsDigest(t *testing.T) {
	if got := hex.EncodeToString(floatOpsOutputs()); got != floatOpsDigest {
		t.Errorf("the pipeline's float arithmetic made other values than on x86-64: digest %s, want %s", got, floatOpsDigest)
	}
}
