// Package testimg makes the synthetic images the kernels' and operations'
// tests run on. It imports nothing of ffcv-go, so any package's tests can
// use it.
package testimg

import "math"

// PhotoLike is an h×w image of c interleaved channels with smooth
// gradients, edges and every value range.
func PhotoLike(h, w, c int) []byte {
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
