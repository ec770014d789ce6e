package imgproc

import "math"

// torchvision.transforms.v2.functional's colour operations on uint8 (H, W, C)
// images (C is 1 or 3), in place. torchvision computes in float32 and casts
// back by truncation (rounding where it rounds first); the steps below keep
// its order and float32 roundings, so most outputs are bit-identical. Its
// CPU kernels compute x + alpha*y as a fused multiply-add, which fma32
// reproduces. Operations whose result depends on the pixel value alone go
// through a 256-entry table.

// fma32 is float32's a*b + c rounded once: the product is exact in float64.
func fma32(a, b, c float32) float32 { return float32(float64(a)*float64(b) + float64(c)) }

// TruncU8 is torch's float32 -> uint8 cast after a clamp to [0, 255].
func TruncU8(v float32) byte {
	if !(v > 0) {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return byte(v)
}

// applyLUT maps every value of img through lut (one table for all channels).
func applyLUT(img []byte, lut *[256]byte) {
	for i, v := range img {
		img[i] = lut[v]
	}
}

// grayTab holds tvGray's products: red's in float32 as torch rounds it,
// green's and blue's in float64, where fma32 forms them exactly.
var grayTab = func() (t struct {
	r    [256]float32
	g, b [256]float64
}) {
	for x := range 256 {
		t.r[x] = float32(x) * float32(0.2989)
		t.g[x] = float64(x) * float64(float32(0.587))
		t.b[x] = float64(x) * float64(float32(0.114))
	}
	return t
}()

// tvGray is torchvision's float luma, before any cast: r·0.2989, then two
// fused multiply-adds, looked up rather than multiplied.
func tvGray(r, g, b byte) float32 {
	l := float32(grayTab.g[g] + float64(grayTab.r[r]))
	return float32(grayTab.b[b] + float64(l))
}

// Grayscale replaces RGB by its luma, truncated, in every channel
// (rgb_to_grayscale with num_output_channels=3).
func Grayscale(img []byte, ch int) {
	if ch != 3 {
		return
	}
	for i := 0; i+2 < len(img); i += 3 {
		px := img[i : i+3 : i+3]
		v := byte(tvGray(px[0], px[1], px[2])) // in [0, 255)
		px[0], px[1], px[2] = v, v, v
	}
}

// blendLUT is _blend(x, other, ratio) for a constant other.
func blendLUT(ratio float64, other float32) *[256]byte {
	var lut [256]byte
	r, a := float32(ratio), float32(1-ratio)
	for x := range lut {
		lut[x] = TruncU8(fma32(other, a, float32(x)*r))
	}
	return &lut
}

// Brightness scales every value by f.
func Brightness(img []byte, f float64) {
	var lut [256]byte
	f32 := float32(f)
	for x := range lut {
		lut[x] = TruncU8(float32(x) * f32)
	}
	applyLUT(img, &lut)
}

// Contrast blends every value with the mean of the floored lumas (of the
// values, for one channel) by f.
func Contrast(img []byte, ch int, f float64) {
	var sum int64
	n := len(img) / ch
	if ch == 3 {
		for i := 0; i+2 < len(img); i += 3 {
			px := img[i : i+3 : i+3]
			sum += int64(lumaFloor(px[0], px[1], px[2]))
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

// fix16 is a fixed-point scale: a unit is 2^-16.
const fix16 = 1 << 16

// lumaFix holds tvGray's three products in fixed point, each rounded to the
// nearest unit.
var lumaFix = func() (t [3][256]int32) {
	for x := range 256 {
		t[0][x] = int32(math.Round(float64(grayTab.r[x]) * fix16))
		t[1][x] = int32(math.Round(grayTab.g[x] * fix16))
		t[2][x] = int32(math.Round(grayTab.b[x] * fix16))
	}
	return t
}()

// lumaEps bounds, in units, how far lumaFloor's fixed-point sum may lie from
// tvGray's float: 1.5 from the tables, and half a unit from each of its two
// float32 roundings below 256.
const lumaEps = 4

// lumaFloor is byte(tvGray(r, g, b)), the floored luma, in integers: the
// fixed-point sum's floor unless the sum lies within lumaEps of an integer
// above 0, where the float steps decide (at 0 every term is exactly 0).
func lumaFloor(r, g, b byte) byte {
	t := lumaFix[0][r] + lumaFix[1][g] + lumaFix[2][b] + lumaEps
	if t&(fix16-1) < 2*lumaEps && t >= fix16 {
		return byte(tvGray(r, g, b))
	}
	return byte(t >> 16)
}

// unitTab is x/255 as torchvision scales a uint8 image to [0, 1], and
// valueTab is that value's cast back, the output of the channel that holds
// the maximum.
var unitTab, valueTab = func() (u [256]float32, v [256]byte) {
	for x := range u {
		u[x] = float32(x) * float32(1.0/255)
		v[x] = byte(u[x] * hueToU8)
	}
	return u, v
}()

// hueToU8 is torchvision's scale back to uint8 after the HSV round trip.
const hueToU8 = float32(255 + 1 - 1e-3)

// Hue shifts the hue by hue (in turns, [-0.5, 0.5]) through torchvision's
// float32 HSV round trip, one pixel at a time. Every rounded step is
// torchvision's; around them, the maximum and minimum are found on the
// bytes and scaled by table, only the two channel ratios the hue needs are
// divided, floors of values known to be above -1 are integer truncations,
// clamps that cannot bind are left out, and grey pixels, whose round trip
// gives v in every channel, skip it.
func Hue(img []byte, ch int, hue float64) {
	if ch != 3 {
		return
	}
	const sixth = float32(1.0 / 6)
	hf := float32(hue)
	for i := 0; i+2 < len(img); i += 3 {
		px := img[i : i+3 : i+3]
		R, G, B := px[0], px[1], px[2]
		mx, mn := max(R, G, B), min(R, G, B)
		if mx == mn {
			o := valueTab[mx]
			px[0], px[1], px[2] = o, o, o
			continue
		}
		v := unitTab[mx]
		cr := v - unitTab[mn]
		s := cr / v // in [0, 1]
		// torchvision's h is bc-gc, (rc+2)-bc or (gc+4)-rc as the maximum is
		// in r, g or b (m = 0, 1, 2): one form, x/cr + 2·m - y/cr, with x and
		// y from tables (+0 is exact), so that only m's choice branches.
		m := 2
		if G == mx {
			m = 1
		}
		if R == mx {
			m = 0
		}
		x, y := px[hueX[m]], px[hueY[m]]
		h := float32((v-unitTab[x])/cr+float32(2*m)) - (v-unitTab[y])/cr
		h = float32(h*sixth) + 1 // in [5/6, 11/6]
		h -= float32(int32(h))   // fmod(h, 1)
		h += hf                  // in [-0.5, 1.5)
		fl := float32(int32(h))
		if fl > h {
			fl-- // floor below 0
		}
		h -= fl // remainder(h, 1)
		h6 := float32(h * 6)
		sector := int32(h6) // h6 ≥ 0: floor
		f := h6 - float32(sector)
		sxf := float32(s * f) // in [0, s]
		oms := 1 - s
		q := float32(1-sxf) * v // in [0, v]: clamp01 cannot bind
		t := float32(sxf+oms) * v
		if t > 1 {
			t = 1 // sxf+oms may round above 1
		}
		p := float32(oms * v) // in [0, v]
		// Each output is in [0, 1]: scaled, in [0, 256), so a plain cast.
		o := [4]byte{valueTab[mx], byte(q * hueToU8), byte(t * hueToU8), byte(p * hueToU8)}
		pick := &hueSectors[sector&7]
		px[0], px[1], px[2] = o[pick[0]], o[pick[1]], o[pick[2]]
	}
}

// hueX and hueY are the channels whose ratios make h when the maximum is in
// channel m (see Hue).
var hueX, hueY = [3]int{2, 0, 1}, [3]int{1, 2, 0}

// hueSectors lists, per sector of h·6, which of (v, q, t, p) goes to r, g
// and b; sector 6 is 0 (h·6 rounds up to 6 when h is just below 1).
var hueSectors = [8][3]byte{{0, 2, 3}, {1, 0, 3}, {3, 0, 2}, {3, 1, 0}, {2, 3, 0}, {0, 3, 1}, {0, 2, 3}, {0, 2, 3}}

// Posterize keeps the top bits bits of every value.
func Posterize(img []byte, bits int) {
	if bits >= 8 {
		return
	}
	mask := byte(0xff << (8 - bits))
	for i, v := range img {
		img[i] = v & mask
	}
}

// Solarize inverts the values at or above threshold (compared in float32).
func Solarize(img []byte, threshold float64) {
	var lut [256]byte
	t := float32(threshold)
	for x := range lut {
		lut[x] = byte(x)
		if float32(x) >= t {
			lut[x] = 255 - byte(x)
		}
	}
	applyLUT(img, &lut)
}

// Invert inverts every value.
func Invert(img []byte) {
	for i, v := range img {
		img[i] = ^v
	}
}
