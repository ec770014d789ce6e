package imgproc

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

// goKernelsDigest is the SHA-256 of what goKernelsOutputs makes on x86-64.
// Every machine must make the same bytes: the C kernels are tested against
// the Go code, and the Go code against this. A different digest on arm64
// (say) means the compiler fused a multiply and an add there (Go does so on
// arm64, ppc64le and s390x unless each product is converted explicitly);
// after a deliberate change to the resize code, take the new digest from
// x86-64.
const goKernelsDigest = "f70c00bb693853121e0f73aee5e4f4051a8cbb230a18f705b036ab270e3cbe55"

// goKernelsOutputs runs the Go kernels (not the C ones) over geometries that
// reach every path: integer factors (areaFast), fractional shrinks (area
// tables), growth and mixed scales (bilinear tables), and regions.
func goKernelsOutputs(t testing.TB) []byte {
	defer func(v bool) { haveSIMD = v }(haveSIMD)
	haveSIMD = false
	rng := rand.New(rand.NewPCG(11, 12))
	h := sha256.New()
	var r Resizer
	for i := 0; i < 400; i++ {
		sw, sh := 2+rng.IntN(90), 1+rng.IntN(90)
		dw, dh := 1+rng.IntN(90), 1+rng.IntN(90)
		switch i % 4 {
		case 0: // integer factors up to 4x4, areaFast
			kx, ky := 1+rng.IntN(4), 1+rng.IntN(4)
			dw, dh = 1+rng.IntN(20), 1+rng.IntN(20)
			sw, sh = dw*kx, dh*ky
		case 1: // shrinking both ways, area tables
			dw, dh = 1+rng.IntN(sw), 1+rng.IntN(sh)
		}
		cn := []int{1, 3, 3, 4}[rng.IntN(4)]
		src := randImage(rng, sw*sh*cn)
		dst := make([]byte, dw*dh*cn)
		r.ResizeAreaFlip(dst, dw, dh, src, sw, sh, sw*cn, cn, i%3 == 0)
		h.Write(dst)
		if dw <= sw && dh <= sh {
			x0, y0 := rng.Float64()*float64(sw)/3, rng.Float64()*float64(sh)/3
			// Products converted explicitly, or arm64 fuses them here too.
			reg := RectF{x0, y0, x0 + float64((float64(sw)-x0)*(0.5+rng.Float64()/2)),
				y0 + float64((float64(sh)-y0)*(0.5+rng.Float64()/2))}
			r.ResizeAreaRegion(dst, dw, dh, src, sw, sh, sw*cn, cn, reg)
			h.Write(dst)
		}
	}
	return h.Sum(nil)
}

func TestGoKernelsDigest(t *testing.T) {
	if got := hex.EncodeToString(goKernelsOutputs(t)); got != goKernelsDigest {
		t.Errorf("the Go resize kernels made other bytes than on x86-64: digest %s, want %s", got, goKernelsDigest)
	}
}
