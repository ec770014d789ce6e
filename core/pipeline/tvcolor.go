package pipeline

import (
	"math"
	"sync"
)

// torchvision.transforms.v2.functional's colour operations on uint8 (H, W, C)
// images (C is 1 or 3), in place. torchvision computes in float32 and casts
// back by truncation (rounding where it rounds first); the steps below keep
// its order and float32 roundings, so most outputs are bit-identical. Its
// CPU kernels compute x + alpha*y as a fused multiply-add, which fma32
// reproduces. Operations whose result depends on the pixel value alone go
// through a 256-entry table.

// fma32 is float32's a*b + c rounded once: the product is exact in float64.
func fma32(a, b, c float32) float32 { return float32(float64(a)*float64(b) + float64(c)) }

// truncU8 is torch's float32 -> uint8 cast after a clamp to [0, 255].
func truncU8(v float32) byte {
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

// tvGrayscale replaces RGB by its luma, truncated, in every channel
// (rgb_to_grayscale with num_output_channels=3).
func tvGrayscale(img []byte, ch int) {
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
		lut[x] = truncU8(fma32(other, a, float32(x)*r))
	}
	return &lut
}

func tvBrightness(img []byte, f float64) {
	var lut [256]byte
	f32 := float32(f)
	for x := range lut {
		lut[x] = truncU8(float32(x) * f32)
	}
	applyLUT(img, &lut)
}

func tvContrast(img []byte, ch int, f float64) {
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

// tvSaturation blends each pixel with its floored luma l: the byte is
// trunc(float32(l·(1-f) + float32(x·f))), clamped, the sum exact in float64
// (the fused multiply-add). Both terms are multiples of 2^-32 for all but
// tiny factors, so the sum is exact in 32.32 fixed point from two 256-entry
// tables; float32 then rounds it up to the integer above its floor q when
// it is at least satThr[q+1], and truncation does the rest. That gives a
// table of every (l, x), which on all but small images is cheaper to fill
// than the float steps per value.
func tvSaturation(img []byte, ch int, f float64) { saturate(img, ch, f, false) }

// policySaturation is tvSaturation for the policies, whose few dozen
// factors recur: it caches each factor's table.
func policySaturation(img []byte, ch int, f float64) { saturate(img, ch, f, true) }

// satFillMin is the fewest pixels for which filling a table beats the
// float steps.
const satFillMin = 1 << 14

func saturate(img []byte, ch int, f float64, keep bool) {
	if ch != 3 {
		return
	}
	r, a := float32(f), float32(1-f)
	tab := satCached(f)
	if tab == nil {
		var grey, own [256]int64
		for x := range 256 {
			g, o := float64(x)*float64(a)*fix32, float64(float32(x)*r)*fix32
			if g != math.Trunc(g) || o != math.Trunc(o) || math.Abs(g)+math.Abs(o) >= 1<<60 {
				satFloat(img, r, a)
				return
			}
			grey[x], own[x] = int64(g), int64(o)
		}
		if !keep && len(img) < 3*satFillMin {
			satFloat(img, r, a)
			return
		}
		tab = satTabs.Get().(*[256][256]byte)
		defer satTabs.Put(tab)
		satFill(tab, &grey, &own)
		if keep {
			satKeep(f, tab)
		}
	}
	for i := 0; i+2 < len(img); i += 3 {
		px := img[i : i+3 : i+3]
		row := &tab[lumaFloor(px[0], px[1], px[2])]
		px[0], px[1], px[2] = row[px[0]], row[px[1]], row[px[2]]
	}
}

// satFill fills tab[l][x] with the blend of x and luma l.
func satFill(tab *[256][256]byte, grey, own *[256]int64) {
	for l := range tab {
		row, g := &tab[l], grey[l]
		for x := range row {
			row[x] = satRound(g + own[x])
		}
	}
}

// satTabs recycles tvSaturation's 64 KiB tables.
var satTabs = sync.Pool{New: func() any { return new([256][256]byte) }}

// satCache keeps the tables of the first satCacheSize factors the policies
// use: they draw theirs from a few dozen, so the fill, which costs as much
// as the blend on a 224×224 image, is paid once per process, not per image.
// Cached tables are never written again.
var satCache struct {
	sync.RWMutex
	tabs map[uint64]*[256][256]byte
}

const satCacheSize = 64

func satCached(f float64) *[256][256]byte {
	satCache.RLock()
	defer satCache.RUnlock()
	return satCache.tabs[math.Float64bits(f)]
}

// satKeep caches a copy of tab for f while there is room.
func satKeep(f float64, tab *[256][256]byte) {
	satCache.Lock()
	defer satCache.Unlock()
	if satCache.tabs == nil {
		satCache.tabs = map[uint64]*[256][256]byte{}
	}
	if len(satCache.tabs) < satCacheSize {
		c := *tab
		satCache.tabs[math.Float64bits(f)] = &c
	}
}

// fix32 is the exact fixed-point scale of tvSaturation's sums.
const fix32 = 1 << 32

// satThr[n] is, in 32.32 fixed point, the least value float32 rounds to n
// or above, for n in [1, 255]: n less half an ulp of the binade below n (a
// tie rounds to n, whose mantissa is even). Entry 0 is below every value,
// so that floors below 0 give 0, and entry 256 above every value, so that
// floors from 255 give 255; the rest pads the index to a power of two.
var satThr = func() (t [512]int64) {
	t[0], t[256] = -1<<62, 1<<62
	for n := 1; n < 256; n++ {
		below := math.Nextafter32(float32(n), 0)
		half := (float64(n) - float64(below)) / 2
		t[n] = int64((float64(n) - half) * fix32)
	}
	return t
}()

// satRound is the clamped byte of float32's truncation of the fixed-point
// value v (|v| < 2^61). Masks, not branches, clamp: the compiler's min and
// max branch here, and an image's clamps mispredict.
func satRound(v int64) byte {
	i := v>>32 + 1 // the floor, plus 1
	i &^= i >> 63  // at least 0
	d := 256 - i
	i = 256 - d&^(d>>63) // at most 256
	return byte(i - 1 - (satThr[i&511]-1-v)>>63)
}

// satBlend is one value of tvSaturation's blend in float steps: x with the
// pixel's floored luma l.
func satBlend(l, x byte, r, a float32) byte {
	return clampTrunc(float32(float64(l)*float64(a) + float64(float32(x)*r)))
}

// satFloat is tvSaturation in float steps throughout.
func satFloat(img []byte, r, a float32) {
	for i := 0; i+2 < len(img); i += 3 {
		px := img[i : i+3 : i+3]
		l := byte(tvGray(px[0], px[1], px[2])) // floor: the luma is in [0, 255)
		px[0], px[1], px[2] = satBlend(l, px[0], r, a), satBlend(l, px[1], r, a), satBlend(l, px[2], r, a)
	}
}

// clampTrunc is truncU8 without branches, for v well inside int32's range:
// a blend's clamps do not follow the image, so branches mispredict.
func clampTrunc(v float32) byte { return byte(min(max(int32(v), 0), 255)) }

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

// tvHue shifts the hue by hue (in turns, [-0.5, 0.5]) through torchvision's
// float32 HSV round trip, one pixel at a time. Every rounded step is
// torchvision's; around them, the maximum and minimum are found on the
// bytes and scaled by table, only the two channel ratios the hue needs are
// divided, floors of values known to be above -1 are integer truncations,
// clamps that cannot bind are left out, and grey pixels, whose round trip
// gives v in every channel, skip it.
func tvHue(img []byte, ch int, hue float64) {
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
// channel m (see tvHue).
var hueX, hueY = [3]int{2, 0, 1}, [3]int{1, 2, 0}

// hueSectors lists, per sector of h·6, which of (v, q, t, p) goes to r, g
// and b; sector 6 is 0 (h·6 rounds up to 6 when h is just below 1).
var hueSectors = [8][3]byte{{0, 2, 3}, {1, 0, 3}, {3, 0, 2}, {3, 1, 0}, {2, 3, 0}, {0, 3, 1}, {0, 2, 3}, {0, 2, 3}}

// tvSharpness blends the image with its 3x3 smoothed version (1/13 around,
// 5/13 in the middle, rounded); the border rows and columns stay.
func tvSharpness(img, scratch []byte, h, w, ch int, f float64) {
	if h <= 2 || w <= 2 {
		return
	}
	copy(scratch, img)
	const a, b = float32(1.0 / 13), float32(5.0 / 13)
	alpha := float32(1 - f)
	stride := w * ch
	for y := 1; y < h-1; y++ {
		up, mid, dn := scratch[(y-1)*stride:y*stride], scratch[y*stride:(y+1)*stride], scratch[(y+1)*stride:(y+2)*stride]
		row := img[y*stride : (y+1)*stride]
		for i := ch; i < stride-ch; i++ {
			// Products are rounded before each sum (no fusion), as a float32
			// convolution does; the summation order is torch's row order.
			s := float32(float32(up[i-ch]) * a)
			s += float32(float32(up[i]) * a)
			s += float32(float32(up[i+ch]) * a)
			s += float32(float32(mid[i-ch]) * a)
			s += float32(float32(mid[i]) * b)
			s += float32(float32(mid[i+ch]) * a)
			s += float32(float32(dn[i-ch]) * a)
			s += float32(float32(dn[i]) * a)
			s += float32(float32(dn[i+ch]) * a)
			blur := float32(math.RoundToEven(float64(s)))
			x := float32(mid[i])
			row[i] = truncU8(fma32(blur-x, alpha, x))
		}
	}
}

// tvPosterize keeps the top bits bits of every value.
func tvPosterize(img []byte, bits int) {
	if bits >= 8 {
		return
	}
	mask := byte(0xff << (8 - bits))
	for i, v := range img {
		img[i] = v & mask
	}
}

// tvSolarize inverts the values at or above threshold (compared in float32).
func tvSolarize(img []byte, threshold float64) {
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

func tvInvert(img []byte) {
	for i, v := range img {
		img[i] = ^v
	}
}

// tvAutocontrast stretches each channel's range to [0, 255].
func tvAutocontrast(img []byte, ch int) {
	for c := 0; c < ch; c++ {
		lo, hi := byte(255), byte(0)
		for i := c; i < len(img); i += ch {
			lo, hi = min(lo, img[i]), max(hi, img[i])
		}
		lut := autocontrastLUT(lo, hi)
		for i := c; i < len(img); i += ch {
			img[i] = lut[img[i]]
		}
	}
}

// autocontrastLUT maps lo..hi onto 0..255 as torchvision's autocontrast
// does, in its float32 steps; an even channel stays.
func autocontrastLUT(lo, hi byte) (lut [256]byte) {
	minimum, inv := float32(lo), float32(float32(hi-lo)*float32(1.0/255))
	if lo == hi {
		minimum, inv = 0, 1
	}
	for x := range lut {
		lut[x] = truncU8(float32(float32(x)-minimum) / inv)
	}
	return lut
}

// equalizeLUT is PIL's equalising table for a channel of n values with
// histogram hist; false when the channel stays as it is.
func equalizeLUT(hist *[256]int, n int) (lut [256]byte, ok bool) {
	last := 255
	for last > 0 && hist[last] == 0 {
		last--
	}
	step := (n - hist[last]) / 255
	if step == 0 {
		return lut, false
	}
	cum := 0
	for x := 1; x < 256; x++ {
		cum += hist[x-1]
		lut[x] = byte(min((cum+step/2)/step, 255))
	}
	return lut, true
}

// tvEqualize equalises each channel's histogram with PIL's table, which
// torchvision reproduces: integer arithmetic, so exact.
func tvEqualize(img []byte, ch int) {
	n := len(img) / ch
	for c := 0; c < ch; c++ {
		var hist [256]int
		for i := c; i < len(img); i += ch {
			hist[img[i]]++
		}
		lut, ok := equalizeLUT(&hist, n)
		if !ok {
			continue
		}
		for i := c; i < len(img); i += ch {
			img[i] = lut[img[i]]
		}
	}
}
