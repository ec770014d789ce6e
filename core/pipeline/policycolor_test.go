package pipeline

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// autocontrast and equalize must give the per-channel versions' bytes.
func TestOnePassColorOpsMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	images := map[string]func(h, w, ch int) []byte{
		"photo": photoLike,
		"noise": func(h, w, ch int) []byte {
			b := make([]byte, h*w*ch)
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return b
		},
		"flat": func(h, w, ch int) []byte { return slices.Repeat([]byte{77}, h*w*ch) },
		"narrow": func(h, w, ch int) []byte {
			b := make([]byte, h*w*ch)
			for i := range b {
				b[i] = byte(100 + r.IntN(3) + 50*(i%ch))
			}
			return b
		},
	}
	ops := []struct {
		name      string
		fast, ref func([]byte, int)
	}{
		{"AutoContrast", autocontrast, tvAutocontrast},
		{"Equalize", equalize, tvEqualize},
	}
	for _, op := range ops {
		for name, gen := range images {
			for _, size := range [][3]int{{1, 1, 3}, {2, 3, 3}, {20, 24, 3}, {224, 224, 3}, {9, 7, 1}} {
				src := gen(size[0], size[1], size[2])
				want, got := slices.Clone(src), slices.Clone(src)
				op.ref(want, size[2])
				op.fast(got, size[2])
				if !slices.Equal(got, want) {
					t.Errorf("%s on %s %v: %d values differ", op.name, name, size, countDiff(got, want))
				}
			}
		}
	}
}
