package imgproc

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestHSVMatchesOpenCV holds RGBToHSV and HSVToRGB to cv2.cvtColor's bytes
// over every input (digests by testdata/gen_hsv.py, OpenCV 5.0.0's x86-64
// wheel): every 24-bit colour forward, every (H < 180, S, V) back, laid
// out in 45-pixel rows so that both OpenCV's SIMD blocks (truncating) and
// its scalar tail (rounding) are covered.
func TestHSVMatchesOpenCV(t *testing.T) {
	fw := make([]byte, 0, 3<<24)
	for i := 0; i < 1<<24; i++ {
		h, s, v := RGBToHSV(byte(i>>16), byte(i>>8), byte(i))
		fw = append(fw, h, s, v)
	}
	inv := make([]byte, 0, 180*256*256*3)
	for h := 0; h < 180; h++ {
		for s := 0; s < 256; s++ {
			for v := 0; v < 256; v++ {
				r, g, b := HSVToRGB(byte(h), byte(s), byte(v), (len(inv)/3)%45 < 45/HSVBlock*HSVBlock)
				inv = append(inv, r, g, b)
			}
		}
	}
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"RGB2HSV", fw, "a5b38b214f65aed9d382cc07bf40311aff2e3e324c98da86df77bef285f224eb"},
		{"HSV2RGB", inv, "0eaa46cd608fca34041f7dcc522c6bc06628f685b1c9eeeecda9d7dd6b8b1c99"},
	} {
		sum := sha256.Sum256(c.got)
		if got := hex.EncodeToString(sum[:]); got != c.want {
			t.Errorf("%s: digest %s, OpenCV's %s", c.name, got, c.want)
		}
	}
}

// TestHSVLUTRows: HSVLUT converts each row as OpenCV does, its first
// whole block truncating and its tail rounding.
func TestHSVLUTRows(t *testing.T) {
	var id [256]byte
	for i := range id {
		id[i] = byte(i)
	}
	const w, h = 37, 3
	img := make([]byte, w*h*3)
	for i := range img {
		img[i] = byte(i * 37)
	}
	want := append([]byte(nil), img...)
	for i := 0; i < w*h; i++ {
		p := want[3*i : 3*i+3]
		hh, s, v := RGBToHSV(p[0], p[1], p[2])
		p[0], p[1], p[2] = HSVToRGB(hh, s, v, i%w < HSVBlock)
	}
	HSVLUT(img, w, &id, &id, &id)
	for i := range img {
		if img[i] != want[i] {
			t.Fatalf("byte %d: %d, want %d", i, img[i], want[i])
		}
	}
}

// TestHSVLUTKernels: the C kernel gives the Go code's bytes for every
// 24-bit colour (every 7th with -short), one by one and in runs of one
// colour, in rows whose width leaves both a truncating block and a rounding
// tail, through identity and shifted tables, hues wrapping through 0 and
// 180.
func TestHSVLUTKernels(t *testing.T) {
	if !haveSIMD {
		t.Skip("no C kernels in this build")
	}
	step := 1
	if testing.Short() {
		step = 7
	}
	const w = 45
	n := (1<<24/step + w - 1) / w * w
	src := make([]byte, 6*n)
	for i := 0; i < n; i++ {
		c := i * step % (1 << 24)
		src[3*i], src[3*i+1], src[3*i+2] = byte(c>>16), byte(c>>8), byte(c)
		// Then the colours again in runs of 11 pixels (the kernel's one-colour
		// groups), from 11 places apart in the sequence.
		c = i / 11 * 11 * step % (1 << 24)
		j := 3 * (n + i)
		src[j], src[j+1], src[j+2] = byte(c>>16), byte(c>>8), byte(c)
	}
	var id, lh, ls, lv [256]byte
	for i := range id {
		id[i] = byte(i)
		lh[i] = byte((i + 170) % 180)
		if i >= 180 {
			lh[i] = 180 // the table's top, as Ultralytics' modulo never gives but OpenCV takes
		}
		ls[i], lv[i] = byte(min(255, i*7/5)), byte(i*3/5)
	}
	defer func(v bool) { useAVX2 = v }(useAVX2)
	for _, tabs := range [][3]*[256]byte{{&id, &id, &id}, {&lh, &ls, &lv}} {
		goImg := append([]byte(nil), src...)
		hsvLUTGo(goImg, w, tabs[0], tabs[1], tabs[2])
		for _, avx := range []bool{false, cpu.X86.HasAVX2} { // arm64: the scalar C twice
			useAVX2 = avx
			cImg := append([]byte(nil), src...)
			hsvLUTC(cImg, w, tabs[0], tabs[1], tabs[2])
			for i := range goImg {
				if goImg[i] != cImg[i] {
					p := i / 3 * 3
					t.Fatalf("AVX2 %v, pixel %d %v: C %v, Go %v", avx, i/3, src[p:p+3], cImg[p:p+3], goImg[p:p+3])
				}
			}
		}
	}
}

// BenchmarkHSVLUT: a 640×640 image of a repeating pattern, and of random
// pixels (whose branches no predictor learns, as in photos).
func BenchmarkHSVLUT(b *testing.B) {
	const w, h = 640, 640
	var lh, ls, lv [256]byte
	for i := range lh {
		lh[i], ls[i], lv[i] = byte((i+3)%180), byte(min(255, i*6/5)), byte(i*4/5)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"pattern", "random"} {
		img := make([]byte, w*h*3)
		for i := range img {
			img[i] = byte(i * 37)
			if name == "random" {
				img[i] = byte(rng.Uint32())
			}
		}
		work := make([]byte, len(img))
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(img)))
			for i := 0; i < b.N; i++ {
				copy(work, img) // the same pixels each time, not their fixed point
				HSVLUT(work, w, &lh, &ls, &lv)
			}
		})
	}
}

func BenchmarkResizeLinear(b *testing.B) {
	const sw, sh, dw, dh = 1280, 960, 640, 481
	src := make([]byte, sw*sh*3)
	for i := range src {
		src[i] = byte(i * 37)
	}
	dst := make([]byte, dw*dh*3)
	var r Resizer
	b.SetBytes(int64(len(dst)))
	for i := 0; i < b.N; i++ {
		r.ResizeLinear(dst, dw, dh, src, sw, sh, sw*3, 3)
	}
}
