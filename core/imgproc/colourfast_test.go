package imgproc

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
)

// The float-table versions of saturation and contrast that the integer
// ones replaced, kept as references byte for byte.

func floatSaturation(img []byte, ch int, f float64) {
	if ch != 3 {
		return
	}
	r, a := float32(f), float32(1-f)
	var grey, own [256]float64
	for x := range 256 {
		grey[x] = float64(x) * float64(a)
		own[x] = float64(float32(x) * r)
	}
	for i := 0; i+2 < len(img); i += 3 {
		px := img[i : i+3 : i+3]
		g := grey[byte(tvGray(px[0], px[1], px[2]))] // floor: the luma is in [0, 255)
		px[0] = clampTrunc(float32(g + own[px[0]]))
		px[1] = clampTrunc(float32(g + own[px[1]]))
		px[2] = clampTrunc(float32(g + own[px[2]]))
	}
}

func floatContrast(img []byte, ch int, f float64) {
	var sum int64
	n := len(img) / ch
	if ch == 3 {
		for i := 0; i+2 < len(img); i += 3 {
			px := img[i : i+3 : i+3]
			sum += int64(tvGray(px[0], px[1], px[2])) // floor: the luma is positive
		}
	} else {
		for _, v := range img {
			sum += int64(v)
		}
	}
	mean := float32(sum) / float32(max(n, 1))
	applyLUT(img, blendLUT(f, mean))
}

// lumaFloor must floor tvGray for every RGB triple.
func TestLumaFloorExhaustive(t *testing.T) {
	for c := range 1 << 24 {
		r, g, b := byte(c>>16), byte(c>>8), byte(c)
		if got, want := lumaFloor(r, g, b), byte(tvGray(r, g, b)); got != want {
			t.Fatalf("(%d, %d, %d): %d, want %d", r, g, b, got, want)
		}
	}
}

// colourFactors are the policies' colour factors, ColorJitter-like random
// ones, and extremes that take the float path.
func colourFactors(r *rand.Rand) []float64 {
	fs := enhanceFactors()
	for range draws(100) {
		fs = append(fs, 2*r.Float64(), 0.6+0.8*r.Float64())
	}
	return append(fs, 0, 1, 0.5, 2, 1e-12, 1-1e-12, 1+0x1p-30, 7.3, 100, 1e6, -0.5, math.Inf(1))
}

// colourImages are random images (smaller and larger than satFillMin), images where each channel runs through
// all 256 values against random others, and a photo.
func colourImages(r *rand.Rand) [][]byte {
	var imgs [][]byte
	for _, n := range []int{4096, satFillMin, 3 * satFillMin} {
		img := make([]byte, 3*n)
		for i := range img {
			img[i] = byte(r.UintN(256))
		}
		imgs = append(imgs, img)
	}
	for c := range 3 {
		img := make([]byte, 3*256*16)
		for i := range len(img) / 3 {
			px := img[3*i : 3*i+3]
			px[0], px[1], px[2] = byte(r.UintN(256)), byte(r.UintN(256)), byte(r.UintN(256))
			px[c] = byte(i)
		}
		imgs = append(imgs, img)
	}
	return append(imgs, colourImage()[:3*256*64], testimg.PhotoLike(37, 41, 3))
}

func TestColourOpsMatchFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	imgs, factors := colourImages(r), colourFactors(r)
	for _, tc := range []struct {
		name      string
		fast, ref func([]byte, int, float64)
	}{
		{"saturation", func(img []byte, ch int, f float64) { Saturation(img, ch, f, nil) }, floatSaturation},
		{"saturation_table", func(img []byte, ch int, f float64) { Saturation(img, ch, f, NewSaturationTable(f)) }, floatSaturation},
		{"contrast", Contrast, floatContrast},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, img := range imgs {
				for _, f := range factors {
					got, want := slices.Clone(img), slices.Clone(img)
					tc.fast(got, 3, f)
					tc.ref(want, 3, f)
					if i := firstDiff(got, want); i >= 0 {
						t.Fatalf("image %d factor %v, value %d (pixel %v): %d, want %d", k, f, i, img[i/3*3:i/3*3+3], got[i], want[i])
					}
				}
			}
		})
	}
}

// Every entry of the saturation table must be the float blend of its luma
// and value, for every factor that fills one.
func TestSaturationTableExhaustive(t *testing.T) {
	for _, f := range colourFactors(rand.New(rand.NewPCG(7, 8))) {
		r, a := float32(f), float32(1-f)
		var grey, own [256]int64
		exact := true
		for x := range 256 {
			g, o := float64(x)*float64(a)*fix32, float64(float32(x)*r)*fix32
			exact = exact && g == math.Trunc(g) && o == math.Trunc(o) && math.Abs(g)+math.Abs(o) < 1<<60
			grey[x], own[x] = int64(g), int64(o)
		}
		if !exact {
			continue
		}
		var tab SaturationTable
		satFill(&tab, &grey, &own)
		for l := range 256 {
			for x := range 256 {
				if got, want := tab[l][x], satBlend(byte(l), byte(x), r, a); got != want {
					t.Fatalf("factor %v luma %d value %d: %d, want %d", f, l, x, got, want)
				}
			}
		}
	}
}
