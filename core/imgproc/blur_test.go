package imgproc

import (
	"math"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
)

// refGaussianBlur is torchvision's blur in float64 with every one of the k
// taps: the value the float32 implementations round.
func refGaussianBlur(img []byte, h, w, ch, k int, sigma float64) []byte {
	kern := make([]float32, k)
	gaussKernel(kern, sigma)
	r := k / 2
	tmp := make([]float64, len(img))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for c := 0; c < ch; c++ {
				var acc float64
				for t := 0; t < k; t++ {
					acc += float64(img[(y*w+reflect(x+t-r, w))*ch+c]) * float64(kern[t])
				}
				tmp[(y*w+x)*ch+c] = acc
			}
		}
	}
	out := make([]byte, len(img))
	for y := 0; y < h; y++ {
		for i := 0; i < w*ch; i++ {
			var acc float64
			for t := 0; t < k; t++ {
				acc += tmp[reflect(y+t-r, h)*w*ch+i] * float64(kern[t])
			}
			out[y*w*ch+i] = byte(min(max(math.RoundToEven(acc), 0), 255))
		}
	}
	return out
}

// TestGaussianBlurMatchesReference: the blur (float32, outer taps left out)
// is within one level of the full-kernel float64 blur, on few values.
func TestGaussianBlurMatchesReference(t *testing.T) {
	const h, w, c = 90, 120, 3
	img := testimg.PhotoLike(h, w, c)
	var blur Blurrer
	for _, tc := range []struct {
		k     int
		sigma float64
	}{
		{3, 0.4}, {5, 1.1}, {7, 2}, {9, 2}, {23, 0.1}, {23, 0.5}, {23, 1}, {23, 1.37}, {23, 2}, {23, 5}, {37, 9},
	} {
		got := slices.Clone(img)
		blur.GaussianBlur(got, h, w, c, tc.k, tc.sigma)
		want := refGaussianBlur(img, h, w, c, tc.k, tc.sigma)
		differ := 0
		for i := range got {
			if got[i] != want[i] {
				differ++
			}
		}
		if d := maxDiff(got, want); d > 1 || differ > len(got)/2000 {
			t.Errorf("k=%d sigma=%v: %d values differ, by up to %d", tc.k, tc.sigma, differ, d)
		}
	}
}

// TestBlurRadius: the taps kept for torchvision's kernel of 23.
func TestBlurRadius(t *testing.T) {
	kern := make([]float32, 23)
	for _, tc := range []struct {
		sigma float64
		want  int
	}{{0.1, 0}, {0.5, 2}, {1, 5}, {1.5, 7}, {2, 10}, {3, 11}, {5, 11}} {
		gaussKernel(kern, tc.sigma)
		if got := blurRadius(kern); got != tc.want {
			t.Errorf("sigma %v: radius %d, want %d", tc.sigma, got, tc.want)
		}
	}
}
