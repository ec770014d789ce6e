package imgproc

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The colour operations as first written, one float32 step after another
// as torchvision's: the references the table-driven versions must equal.

// refGray is torchvision's float luma, before any cast.
func refGray(r, g, b byte) float32 {
	l := float32(r) * float32(0.2989)
	l = fma32(float32(g), 0.587, l)
	return fma32(float32(b), 0.114, l)
}

// refGrayscale replaces RGB by its luma, truncated, in every channel
// (rgb_to_grayscale with num_output_channels=3).
func refGrayscale(img []byte, ch int) {
	if ch != 3 {
		return
	}
	for i := 0; i+2 < len(img); i += 3 {
		v := TruncU8(refGray(img[i], img[i+1], img[i+2]))
		img[i], img[i+1], img[i+2] = v, v, v
	}
}

func refContrast(img []byte, ch int, f float64) {
	var sum int64
	n := len(img) / ch
	if ch == 3 {
		for i := 0; i+2 < len(img); i += 3 {
			sum += int64(refGray(img[i], img[i+1], img[i+2])) // floor: the luma is positive
		}
	} else {
		for _, v := range img {
			sum += int64(v)
		}
	}
	// The sum of integer lumas is exact in float32 up to 2^24 (65,793 pixels
	// of 255), whatever order torch adds them in.
	mean := float32(sum) / float32(max(n, 1))
	applyLUT(img, blendLUT(f, mean))
}

func refSaturation(img []byte, ch int, f float64) {
	if ch != 3 {
		return
	}
	r, a := float32(f), float32(1-f)
	for i := 0; i+2 < len(img); i += 3 {
		g := float32(math.Floor(float64(refGray(img[i], img[i+1], img[i+2]))))
		px := img[i : i+3 : i+3]
		px[0] = TruncU8(fma32(g, a, float32(px[0])*r))
		px[1] = TruncU8(fma32(g, a, float32(px[1])*r))
		px[2] = TruncU8(fma32(g, a, float32(px[2])*r))
	}
}

// refHue shifts the hue by hue (in turns, [-0.5, 0.5]) through torchvision's
// float32 HSV round trip, one pixel at a time.
func refHue(img []byte, ch int, hue float64) {
	if ch != 3 {
		return
	}
	const inv255 = float32(1.0 / 255)
	const sixth = float32(1.0 / 6)
	const toU8 = float32(255 + 1 - 1e-3)
	hf := float32(hue)
	for i := 0; i+2 < len(img); i += 3 {
		px := img[i : i+3 : i+3]
		// Rounded here: arm64 would otherwise fuse a scaling into maxc-r.
		r, g, b := float32(float32(px[0])*inv255), float32(float32(px[1])*inv255), float32(float32(px[2])*inv255)
		maxc, minc := max(r, g, b), min(r, g, b)
		eq := maxc == minc
		cr := maxc - minc
		sdiv, cdiv := maxc, cr
		if eq {
			sdiv, cdiv = 1, 1
		}
		s := cr / sdiv
		rc, gc, bc := (maxc-r)/cdiv, (maxc-g)/cdiv, (maxc-b)/cdiv
		var h float32
		switch {
		case maxc == r:
			h = bc - gc
		case maxc == g:
			h = float32(rc+2) - bc
		default:
			h = float32(gc+4) - rc
		}
		h = float32(h*sixth) + 1
		h = h - float32(math.Floor(float64(h))) // fmod(h, 1) for h >= 0
		h += hf
		h = h - float32(math.Floor(float64(h))) // remainder(h, 1)
		h6 := float32(h * 6)
		fi := float32(math.Floor(float64(h6)))
		f := h6 - fi
		sxf := float32(s * f)
		oms := 1 - s
		v := maxc
		q := clamp01(float32(1-sxf) * v)
		t := clamp01(float32(sxf+oms) * v)
		p := clamp01(float32(oms * v))
		var o [3]float32
		switch ((int(fi) % 6) + 6) % 6 {
		case 0:
			o = [3]float32{v, t, p}
		case 1:
			o = [3]float32{q, v, p}
		case 2:
			o = [3]float32{p, v, t}
		case 3:
			o = [3]float32{p, q, v}
		case 4:
			o = [3]float32{t, p, v}
		default:
			o = [3]float32{v, p, q}
		}
		px[0], px[1], px[2] = TruncU8(o[0]*toU8), TruncU8(o[1]*toU8), TruncU8(o[2]*toU8)
	}
}

// colourImage is every grey level, the corners of the RGB cube and random
// pixels, which reach each branch of the HSV round trip.
func colourImage() []byte {
	var img []byte
	for v := 0; v < 256; v++ {
		img = append(img, byte(v), byte(v), byte(v))
	}
	for _, a := range []byte{0, 1, 127, 128, 254, 255} {
		for _, b := range []byte{0, 1, 127, 128, 254, 255} {
			for _, c := range []byte{0, 1, 127, 128, 254, 255} {
				img = append(img, a, b, c)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1<<18; i++ {
		img = append(img, byte(rng.UintN(256)), byte(rng.UintN(256)), byte(rng.UintN(256)))
	}
	return img
}

// TestColourOpsMatchReference: bit for bit, for factors inside and at the
// ends of ColorJitter's ranges.
func TestColourOpsMatchReference(t *testing.T) {
	img := colourImage()
	for _, tc := range []struct {
		name      string
		fast, ref func([]byte)
	}{
		{"grayscale", func(b []byte) { Grayscale(b, 3) }, func(b []byte) { refGrayscale(b, 3) }},
		{"contrast0.6", func(b []byte) { Contrast(b, 3, 0.6) }, func(b []byte) { refContrast(b, 3, 0.6) }},
		{"contrast1.4", func(b []byte) { Contrast(b, 3, 1.4) }, func(b []byte) { refContrast(b, 3, 1.4) }},
		{"contrast_grey", func(b []byte) { Contrast(b, 1, 0.7) }, func(b []byte) { refContrast(b, 1, 0.7) }},
		{"saturation0", func(b []byte) { Saturation(b, 3, 0, nil) }, func(b []byte) { refSaturation(b, 3, 0) }},
		{"saturation0.6", func(b []byte) { Saturation(b, 3, 0.6, nil) }, func(b []byte) { refSaturation(b, 3, 0.6) }},
		{"saturation1.7", func(b []byte) { Saturation(b, 3, 1.7, nil) }, func(b []byte) { refSaturation(b, 3, 1.7) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := slices.Clone(img), slices.Clone(img)
			tc.fast(got)
			tc.ref(want)
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("value %d (pixel %v): %d, want %d", i, img[i/3*3:i/3*3+3], got[i], want[i])
			}
		})
	}
	for _, hue := range []float64{-0.5, -0.37, -0.1, -1e-6, 0, 0.07, 0.1, 0.25, 1.0 / 3, 0.4999, 0.5} {
		got, want := slices.Clone(img), slices.Clone(img)
		Hue(got, 3, hue)
		refHue(want, 3, hue)
		if i := firstDiff(got, want); i >= 0 {
			t.Fatalf("hue %v, value %d (pixel %v): %d, want %d", hue, i, img[i/3*3:i/3*3+3], got[i], want[i])
		}
	}
}

func clamp01(v float32) float32 { return min(max(v, 0), 1) }

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
