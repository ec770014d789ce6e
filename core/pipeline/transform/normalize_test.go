package transform

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// ---- float16 ----------------------------------------------------------------

// halfTable holds the value of every finite non-negative half, by bit pattern.
var halfTable = func() []float64 {
	t := make([]float64, 0x7c00)
	for b := range t {
		e, m := b>>10, float64(b&0x3ff)
		if e == 0 {
			t[b] = m * math.Pow(2, -24)
		} else {
			t[b] = (1 + m/1024) * math.Pow(2, float64(e-15))
		}
	}
	return t
}()

// halfRef rounds x to the nearest half, ties to the even pattern, by search.
func halfRef(x float64) uint16 {
	var sign uint16
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	switch {
	case math.IsNaN(x):
		return 0x7e00
	case x >= 65520: // 65504 + half an ulp (16): ties go to the even "65536", i.e. inf
		return sign | 0x7c00
	}
	i, _ := slices.BinarySearch(halfTable, x)
	if i == len(halfTable) {
		return sign | 0x7bff
	}
	if halfTable[i] == x || i == 0 {
		return sign | uint16(i)
	}
	lo, hi := halfTable[i-1], halfTable[i]
	switch {
	case x-lo < hi-x:
		return sign | uint16(i-1)
	case x-lo > hi-x:
		return sign | uint16(i)
	case (i-1)%2 == 0:
		return sign | uint16(i-1)
	}
	return sign | uint16(i)
}

func checkHalf(t *testing.T, f float32) {
	t.Helper()
	got, want := float16(f), halfRef(float64(f))
	if math.IsNaN(float64(f)) {
		if got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
			t.Fatalf("float16(NaN) = %#04x, not a NaN", got)
		}
		return
	}
	if got != want {
		t.Fatalf("float16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
	}
}

func TestFloat16Tricky(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, f := range []float32{
		0, float32(math.Copysign(0, -1)), 1, -1, 0.5, 2048, 2049, 2050, 2051, 4097, 0.1, 1.0 / 3,
		65504, 65505, 65519, 65519.996, 65520, 65536, -65520, 1e10, -1e10, inf, -inf, float32(math.NaN()),
		// subnormals of float16: 2^-24 is the smallest, 2^-25 a tie with zero
		float32(math.Pow(2, -24)), float32(math.Pow(2, -25)), math.Nextafter32(float32(math.Pow(2, -25)), 1),
		math.Nextafter32(float32(math.Pow(2, -25)), 0), float32(3 * math.Pow(2, -25)), float32(5 * math.Pow(2, -25)),
		float32(math.Pow(2, -26)), float32(math.Pow(2, -14)), float32(math.Pow(2, -14) - math.Pow(2, -25)),
		float32(math.Pow(2, -14) - math.Pow(2, -24)), float32(1023.5 * math.Pow(2, -24)), float32(1022.5 * math.Pow(2, -24)),
		// float32 subnormals and tiny normals
		math.Float32frombits(1), math.Float32frombits(0x007fffff), math.Float32frombits(0x00800000), 1e-30,
		// rounding to the next binade (mantissa carry)
		2047.5, 2047.75, 1.99951171875, 1.999755859375, 1.9998779296875,
	} {
		checkHalf(t, f)
		checkHalf(t, -f)
	}
}

// TestFloat16AllHalves checks every half, the midpoints between neighbours
// (ties to even) and their float32 neighbours.
func TestFloat16AllHalves(t *testing.T) {
	for b := 0; b < 0x7c00; b++ {
		v := float32(halfTable[b])
		checkHalf(t, v)
		checkHalf(t, math.Nextafter32(v, 0))
		checkHalf(t, math.Nextafter32(v, float32(math.Inf(1))))
		next := 65536.0
		if b+1 < len(halfTable) {
			next = halfTable[b+1]
		}
		mid := float32((halfTable[b] + next) / 2) // exact: 12 significant bits
		checkHalf(t, mid)
		checkHalf(t, -mid)
		checkHalf(t, math.Nextafter32(mid, 0))
		checkHalf(t, math.Nextafter32(mid, float32(math.Inf(1))))
	}
}

func TestFloat16Random(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300000; i++ {
		checkHalf(t, math.Float32frombits(r.Uint32()))
		// and values in the half range, where rounding matters
		checkHalf(t, float32((r.Float64()*2-1)*70000))
	}
}

// TestFloat16Of64 checks the single rounding from float64, including values
// just off a midpoint by less than a float32 ulp, where rounding to float32
// first and then to float16 would land on the tie and go the wrong way.
func TestFloat16Of64(t *testing.T) {
	check := func(x float64) {
		t.Helper()
		if got, want := float16of64(x), halfRef(x); got != want {
			t.Fatalf("float16of64(%v) = %#04x, want %#04x", x, got, want)
		}
	}
	for b := 0; b < 0x7c00; b++ {
		next := 65536.0
		if b+1 < len(halfTable) {
			next = halfTable[b+1]
		}
		mid := (halfTable[b] + next) / 2
		for _, x := range []float64{halfTable[b], mid, mid * (1 + 1e-12), mid * (1 - 1e-12), mid + 1e-300} {
			check(x)
			check(-x)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300000; i++ {
		check((r.Float64()*2 - 1) * 70000)
		check(math.Ldexp(r.Float64(), -r.IntN(40)))
	}
	for _, x := range []float64{0, 1e-320, math.MaxFloat64, math.Inf(1), math.Inf(-1), 65519.999999, 65520} {
		check(x)
	}
}

// ---- normalize -----------------------------------------------------------------

func TestNormalize(t *testing.T) {
	// ImageNet's, as float64: the table is computed from the values as given.
	mean := []float64{0.485 * 255, 0.456 * 255, 0.406 * 255}
	std := []float64{0.229 * 255, 0.224 * 255, 0.225 * 255}
	in := make([]byte, 256*3)
	for i := range in {
		in[i] = byte(i / 3)
	}
	spec := optest.ImgSpec(16, 16, 3)
	for _, dt := range []string{"<f4", "<f2"} {
		t.Run(dt, func(t *testing.T) {
			out, got := optest.Apply(t, optest.NewOp(t, "normalize", map[string]any{"mean": mean, "std": std, "dtype": dt}), spec, in, 0, 0)
			if out.DType != dt || !slices.Equal(out.Shape, spec.Shape) {
				t.Fatalf("output %v", out)
			}
			for i, v := range in {
				k := i % 3
				// (x - mean) / std, computed exactly enough and rounded once.
				ref := (float64(v) - mean[k]) / std[k]
				if dt == "<f4" {
					g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:]))
					if g != float32(ref) {
						t.Fatalf("x=%d channel %d: %v, want %v", v, k, g, float32(ref))
					}
				} else if g := binary.LittleEndian.Uint16(got[2*i:]); g != halfRef(ref) {
					t.Fatalf("x=%d channel %d: %#04x, want %#04x (%v)", v, k, g, halfRef(ref), ref)
				}
			}
		})
	}
	for _, args := range []map[string]any{
		{"mean": []float32{0, 0}, "std": []float32{1}, "dtype": "<f4"},
		{"mean": []float32{0}, "std": []float32{0}, "dtype": "<f4"},
		{"mean": []float32{0}, "std": []float32{1}, "dtype": "<f8"},
	} {
		raw, _ := json.Marshal(args)
		if _, err := newNormalize(pipeline.Env{}, raw); err == nil {
			t.Errorf("normalize%v accepted", args)
		}
	}
}
