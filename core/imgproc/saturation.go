package imgproc

import (
	"math"
	"sync"
)

// Saturation blends each pixel with its floored luma l: the byte is
// trunc(float32(l·(1-f) + float32(x·f))), clamped, the sum exact in float64
// (the fused multiply-add). Both terms are multiples of 2^-32 for all but
// tiny factors, so the sum is exact in 32.32 fixed point from two 256-entry
// tables; float32 then rounds it up to the integer above its floor q when
// it is at least satThr[q+1], and truncation does the rest. That gives a
// table of every (l, x), which on all but small images is cheaper to fill
// than the float steps per value.
//
// tab is f's table (NewSaturationTable), for callers whose factors recur;
// nil fills one from a pool, or takes the float steps where filling costs
// more (small images) or the sums are not exact.
func Saturation(img []byte, ch int, f float64, tab *SaturationTable) {
	if ch != 3 {
		return
	}
	if tab == nil {
		grey, own, ok := satTerms(f)
		if !ok || len(img) < 3*satFillMin {
			satFloat(img, float32(f), float32(1-f))
			return
		}
		tab = satTabs.Get().(*SaturationTable)
		defer satTabs.Put(tab)
		satFill(tab, &grey, &own)
	}
	for i := 0; i+2 < len(img); i += 3 {
		px := img[i : i+3 : i+3]
		row := &tab[lumaFloor(px[0], px[1], px[2])]
		px[0], px[1], px[2] = row[px[0]], row[px[1]], row[px[2]]
	}
}

// SaturationTable is Saturation's output for one factor, by floored luma
// and value.
type SaturationTable [256][256]byte

// NewSaturationTable returns factor f's table, or nil where Saturation
// takes the float steps for f (sums not exact in fixed point: tiny, huge or
// non-finite factors). Filling one costs about as much as blending a
// 224×224 image.
func NewSaturationTable(f float64) *SaturationTable {
	grey, own, ok := satTerms(f)
	if !ok {
		return nil
	}
	tab := new(SaturationTable)
	satFill(tab, &grey, &own)
	return tab
}

// satFillMin is the fewest pixels for which filling a table beats the
// float steps.
const satFillMin = 1 << 14

// satTerms are factor f's two terms of every blend in 32.32 fixed point:
// the luma's l·(1-f) and the value's float32(x·f); false where they are
// not exact.
func satTerms(f float64) (grey, own [256]int64, ok bool) {
	r, a := float32(f), float32(1-f)
	for x := range 256 {
		g, o := float64(x)*float64(a)*fix32, float64(float32(x)*r)*fix32
		if g != math.Trunc(g) || o != math.Trunc(o) || math.Abs(g)+math.Abs(o) >= 1<<60 {
			return grey, own, false
		}
		grey[x], own[x] = int64(g), int64(o)
	}
	return grey, own, true
}

// satFill fills tab[l][x] with the blend of x and luma l.
func satFill(tab *SaturationTable, grey, own *[256]int64) {
	for l := range tab {
		row, g := &tab[l], grey[l]
		for x := range row {
			row[x] = satRound(g + own[x])
		}
	}
}

// satTabs recycles Saturation's 64 KiB tables.
var satTabs = sync.Pool{New: func() any { return new(SaturationTable) }}

// fix32 is the exact fixed-point scale of Saturation's sums.
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

// satBlend is one value of Saturation's blend in float steps: x with the
// pixel's floored luma l.
func satBlend(l, x byte, r, a float32) byte {
	return clampTrunc(float32(float64(l)*float64(a) + float64(float32(x)*r)))
}

// satFloat is Saturation in float steps throughout.
func satFloat(img []byte, r, a float32) {
	for i := 0; i+2 < len(img); i += 3 {
		px := img[i : i+3 : i+3]
		l := byte(tvGray(px[0], px[1], px[2])) // floor: the luma is in [0, 255)
		px[0], px[1], px[2] = satBlend(l, px[0], r, a), satBlend(l, px[1], r, a), satBlend(l, px[2], r, a)
	}
}

// clampTrunc is TruncU8 without branches, for v well inside int32's range:
// a blend's clamps do not follow the image, so branches mispredict.
func clampTrunc(v float32) byte { return byte(min(max(int32(v), 0), 255)) }
