package imgproc

// Differences, and the policies' magnitudes the kernels are tested on.

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
