package pipeline

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// sharpen must give tvSharpness's bytes (torch's float steps) for every
// factor the policies draw and others, on photos and noise, rows wider
// than its stack buffer included.
func TestSharpenMatchesFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var factors []float64
	for _, s := range []space{spaceRA, spaceTA, spaceAM} {
		for i := 0; i < 31; i++ {
			m, _ := s.magnitude(opSharpness, i, 31, 1, 1)
			factors = append(factors, 1+m, 1-m)
		}
	}
	for i := 0; i < 40; i++ {
		factors = append(factors, 4*r.Float64())
	}
	factors = append(factors, 0, 1, 2, 10, 255)
	noise := func(h, w, ch int) []byte {
		b := make([]byte, h*w*ch)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	for _, size := range [][3]int{{1, 5, 3}, {3, 3, 1}, {3, 4, 3}, {20, 24, 3}, {57, 31, 1}, {224, 224, 3}, {4, 1500, 3}, {3, 4097, 1}} {
		h, w, ch := size[0], size[1], size[2]
		for _, src := range [][]byte{photoLike(h, w, ch), noise(h, w, ch)} {
			for _, f := range factors {
				want, got := slices.Clone(src), slices.Clone(src)
				tvSharpness(want, make([]byte, len(src)), h, w, ch, f)
				sharpen(got, make([]byte, len(src)), h, w, ch, f)
				if !slices.Equal(got, want) {
					t.Fatalf("%dx%dx%d factor %v: %d values differ", h, w, ch, f, countDiff(got, want))
				}
			}
		}
	}
}
