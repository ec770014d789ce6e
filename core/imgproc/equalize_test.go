package imgproc

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
)

// Autocontrast and Equalize must give the per-channel versions' bytes.
func TestOnePassColorOpsMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	images := map[string]func(h, w, ch int) []byte{
		"photo": testimg.PhotoLike,
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
		{"AutoContrast", Autocontrast, autocontrastChannels},
		{"Equalize", Equalize, equalizeChannels},
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

// TestExactColorOps: the integer operations on known values.
func TestExactColorOps(t *testing.T) {
	in := []byte{0, 1, 63, 64, 127, 128, 200, 255}
	for _, tc := range []struct {
		name string
		f    func([]byte)
		want []byte
	}{
		{"posterize2", func(b []byte) { Posterize(b, 2) }, []byte{0, 0, 0, 64, 64, 128, 192, 192}},
		{"posterize8", func(b []byte) { Posterize(b, 8) }, in},
		{"solarize128", func(b []byte) { Solarize(b, 128) }, []byte{0, 1, 63, 64, 127, 127, 55, 0}},
		{"solarize127.5", func(b []byte) { Solarize(b, 127.5) }, []byte{0, 1, 63, 64, 127, 127, 55, 0}},
		{"invert", Invert, []byte{255, 254, 192, 191, 128, 127, 55, 0}},
		// torchvision gives 254 for the maximum here: 127 / float32(127/255) < 255.
		{"Autocontrast", func(b []byte) { autocontrastChannels(b[:5], 1) }, []byte{0, 2, 126, 128, 254, 128, 200, 255}},
		{"equalize_flat", func(b []byte) { clear(b); equalizeChannels(b, 1) }, make([]byte, 8)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := slices.Clone(in)
			tc.f(b)
			if !slices.Equal(b, tc.want) {
				t.Fatalf("got %v, want %v", b, tc.want)
			}
		})
	}
}
