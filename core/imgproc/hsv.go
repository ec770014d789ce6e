package imgproc

import "math"

// OpenCV's 8-bit HSV (cv2.COLOR_RGB2HSV, COLOR_HSV2RGB): H in [0, 180)
// (degrees halved), S and V in [0, 255]. The forward conversion is
// OpenCV's integer arithmetic (12-bit reciprocal tables), the inverse its
// float32 sector formula rounded half to even, so both give OpenCV's bytes.

const hsvShift = 12

// hsvSdiv[v] is round(255·2¹²/v), hsvHdiv[d] round(180·2¹²/(6d)).
// Package variables set by functions (not init), so that the C kernel's
// copy of them (simd_cgo.go) is made after them.
var hsvSdiv, hsvHdiv = hsvReciprocals()

func hsvReciprocals() (sdiv, hdiv [256]int32) {
	for i := 1; i < 256; i++ {
		sdiv[i] = int32(math.RoundToEven(float64(255<<hsvShift) / float64(i)))
		hdiv[i] = int32(math.RoundToEven(float64(180<<hsvShift) / (6 * float64(i))))
	}
	return sdiv, hdiv
}

// RGBToHSV is OpenCV's 8-bit RGB2HSV of one pixel.
func RGBToHSV(r, g, b byte) (h, s, v byte) {
	ri, gi, bi := int32(r), int32(g), int32(b)
	vi := max(ri, gi, bi)
	diff := vi - min(ri, gi, bi)
	si := (diff*hsvSdiv[vi] + 1<<(hsvShift-1)) >> hsvShift
	var hi int32
	switch {
	case vi == ri:
		hi = gi - bi
	case vi == gi:
		hi = bi - ri + 2*diff
	default:
		hi = ri - gi + 4*diff
	}
	hi = (hi*hsvHdiv[diff] + 1<<(hsvShift-1)) >> hsvShift
	if hi < 0 {
		hi += 180
	}
	return byte(hi), byte(si), byte(vi)
}

// hsvSectors are OpenCV's (b, g, r) picks from (v, p, q, t) per sector.
var hsvSectors = [6][3]uint8{{1, 3, 0}, {1, 0, 2}, {3, 0, 1}, {0, 2, 1}, {0, 1, 3}, {2, 1, 0}}

// hsvUnit[x] is x/255 as OpenCV computes it, x·(1/255) in float32.
var hsvUnit = func() (u [256]float32) {
	for i := range u {
		u[i] = float32(i) * float32(1.0/255)
	}
	return u
}()

// hueSector is a hue's sector and the fraction within it (and 1 minus it),
// as OpenCV's HSV2RGB computes them in float32.
type hueSector struct {
	sector    int
	frac, omf float32
}

// hsvHues holds hueSector of every hue a table may give (0..180).
var hsvHues = hsvHueSectors()

func hsvHueSectors() (hues [181]hueSector) {
	for h := range hues {
		// Rounded here, so that it is never fused with the subtraction below.
		hf := float32(float32(h) * float32(6.0/180))
		// h = 180: OpenCV's fmod(h, 6).
		if hf >= 6 {
			hf = float32(math.Mod(float64(hf), 6))
		}
		sector := int(hf)
		hf -= float32(sector)
		hues[h] = hueSector{sector, hf, 1 - hf}
	}
	return hues
}

// hsvScaled is OpenCV's 8-bit HSV2RGB of one pixel (h <= 180) before its
// conversion to bytes: r, g and b times 255, from its float32 sector
// formula.
func hsvScaled(h, s, v byte) (r, g, b float32) {
	vf := hsvUnit[v]
	if s == 0 {
		x := vf * 255
		return x, x, x
	}
	sf, hu := hsvUnit[s], &hsvHues[h]
	// OpenCV's build fuses 1 - s·h and 1 - s·(1-h) into FMAs (one
	// rounding); the other products round on their own (explicit float32
	// conversions keep Go from fusing them).
	tab := [4]float32{
		vf,
		float32(vf * (1 - sf)),
		float32(vf * fnma32(sf, hu.frac)),
		float32(vf * fnma32(sf, hu.omf)),
	}
	sec := &hsvSectors[hu.sector]
	return float32(tab[sec[2]] * 255), float32(tab[sec[1]] * 255), float32(tab[sec[0]] * 255)
}

// HSVToRGB is OpenCV's 8-bit HSV2RGB of one pixel (h <= 180): its float32
// sector formula, the result ×255 rounded half to even (OpenCV's scalar
// code) or, with trunc, truncated (its SIMD code).
func HSVToRGB(h, s, v byte, trunc bool) (r, g, b byte) {
	rf, gf, bf := hsvScaled(h, s, v)
	if trunc {
		return truncSat(rf), truncSat(gf), truncSat(bf)
	}
	return roundSat(rf), roundSat(gf), roundSat(bf)
}

// fnma32 is 1 - a·b rounded once to float32, as an FMA instruction does.
func fnma32(a, b float32) float32 {
	return float32(math.FMA(-float64(a), float64(b), 1))
}

// truncSat is OpenCV's SIMD v_trunc then pack: toward zero, clamped.
func truncSat(x float32) byte {
	if x <= 0 {
		return 0
	}
	if x >= 255 {
		return 255
	}
	return byte(x)
}

// roundSat is OpenCV's saturate_cast<uchar>(float): round half to even,
// clamped to [0, 255].
func roundSat(x float32) byte {
	r := math.RoundToEven(float64(x))
	if r <= 0 {
		return 0
	}
	if r >= 255 {
		return 255
	}
	return byte(r)
}

// HSVBlock is the pixels of a row OpenCV's x86-64 wheels (AVX2 build)
// convert HSV to RGB at a time with SIMD, truncating; the pixels of a row
// past its last whole block go through its scalar code, which rounds.
const HSVBlock = 32

// HSVLUT maps each pixel of a w-pixel-wide RGB image through OpenCV's
// 8-bit HSV: its hue, saturation and value looked up in lutH, lutS and
// lutV, and back to RGB, as cv2.cvtColor does it row by row (Ultralytics'
// RandomHSV). lutH must map into [0, 180).
func HSVLUT(img []byte, w int, lutH, lutS, lutV *[256]byte) {
	if haveSIMD && w > 0 {
		for _, h := range lutH[:180] { // the hues RGB2HSV gives
			if h > 180 {
				panic("imgproc: HSVLUT's hue table maps a hue outside [0, 180]")
			}
		}
		hsvLUTC(img, w, lutH, lutS, lutV) // the same bytes, about 4× faster
		return
	}
	hsvLUTGo(img, w, lutH, lutS, lutV)
}

// hsvLUTGo is HSVLUT in Go: the reference the C kernel follows.
func hsvLUTGo(img []byte, w int, lutH, lutS, lutV *[256]byte) {
	simd := w / HSVBlock * HSVBlock
	for row := 0; row+3*w <= len(img); row += 3 * w {
		for x := 0; x < w; x++ {
			p := img[row+3*x : row+3*x+3 : row+3*x+3]
			h, s, v := RGBToHSV(p[0], p[1], p[2])
			r, g, b := hsvScaled(lutH[h], lutS[s], lutV[v])
			if x < simd {
				p[0], p[1], p[2] = truncSat(r), truncSat(g), truncSat(b)
			} else {
				p[0], p[1], p[2] = roundSat(r), roundSat(g), roundSat(b)
			}
		}
	}
}
