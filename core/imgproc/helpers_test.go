package imgproc

import "math"

// Test images, differences, and the policies' magnitudes the kernels are
// tested on.

// photoLike is an image with smooth gradients, edges and every value range.
func photoLike(h, w, c int) []byte {
	b := make([]byte, h*w*c)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for k := 0; k < c; k++ {
				v := 128 + 100*math.Sin(float64(x*(k+1))/5+float64(y)/7)
				if (x/6+y/5)%3 == 0 {
					v = 255 - v/2
				}
				b[(y*w+x)*c+k] = byte(v)
			}
		}
	}
	return b
}

func countDiff(a, b []byte) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func maxDiff(a, b []byte) int {
	m := 0
	for i := range a {
		m = max(m, int(a[i])-int(b[i]), int(b[i])-int(a[i]))
	}
	return m
}

// The largest shear, rotation (degrees) and enhancement of torchvision's
// RandAugment (ra), TrivialAugmentWide (ta) and AugMix (am) spaces.
const (
	raShear, taShear     = 0.3, 0.99
	raRotate, taRotate   = 30, 135
	raEnhance, taEnhance = 0.9, 0.99
	amEnhance            = 0.9
)

// enhanceFactors are the Color and Sharpness factors (1 ± magnitude) of
// the RandAugment, TrivialAugmentWide and AugMix spaces' 31 bins.
func enhanceFactors() []float64 {
	var fs []float64
	for _, top := range []float64{raEnhance, taEnhance, amEnhance} {
		for i := 0; i < 31; i++ {
			m := Linspace32(0, top, 31, i)
			fs = append(fs, 1+m, 1-m)
		}
	}
	return fs
}
