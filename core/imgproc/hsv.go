package imgproc

import "math"

// OpenCV's 8-bit HSV (cv2.COLOR_RGB2HSV, COLOR_HSV2RGB): H in [0, 180)
// (degrees halved), S and V in [0, 255]. The forward conversion is
// OpenCV's integer arithmetic (12-bit reciprocal tables), the inverse its
// float32 sector formula rounded half to even, so both give OpenCV's bytes.

const hsvShift = 12

// hsvSdiv[v] is round(255·2¹²/v), hsvHdiv[d] round(180·2¹²/(6d)).
var hsvSdiv, hsvHdiv [256]int32

func init() {
	for i := 1; i < 256; i++ {
		hsvSdiv[i] = int32(math.RoundToEven(float64(255<<hsvShift) / float64(i)))
		hsvHdiv[i] = int32(math.RoundToEven(float64(180<<hsvShift) / (6 * float64(i))))
	}
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

// HSVToRGB is OpenCV's 8-bit HSV2RGB of one pixel (h <= 180): its float32
// sector formula, the result ×255 rounded half to even (OpenCV's scalar
// code) or, with trunc, truncated (its SIMD code).
func HSVToRGB(h, s, v byte, trunc bool) (r, g, b byte) {
	to8 := roundSat
	if trunc {
		to8 = truncSat
	}
	vf := float32(v) * float32(1.0/255)
	if s == 0 {
		c := to8(vf * 255)
		return c, c, c
	}
	sf := float32(s) * float32(1.0/255)
	// Rounded here, so that it is never fused with the subtraction below.
	hf := float32(float32(h) * float32(6.0/180))
	// h = 180 (a hue table may give it): OpenCV's fmod(h, 6).
	if hf >= 6 {
		hf = float32(math.Mod(float64(hf), 6))
	}
	sector := int(hf)
	hf -= float32(sector)
	// OpenCV's build fuses 1 - s·h and 1 - s·(1-h) into FMAs (one
	// rounding); the other products round on their own (explicit float32
	// conversions keep Go from fusing them).
	tab := [4]float32{
		vf,
		float32(vf * (1 - sf)),
		float32(vf * fnma32(sf, hf)),
		float32(vf * fnma32(sf, 1-hf)),
	}
	sec := hsvSectors[sector]
	return to8(tab[sec[2]] * 255), to8(tab[sec[1]] * 255), to8(tab[sec[0]] * 255)
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
	simd := w / HSVBlock * HSVBlock
	for i := 0; i+3 <= len(img); i += 3 {
		p := img[i : i+3 : i+3]
		h, s, v := RGBToHSV(p[0], p[1], p[2])
		p[0], p[1], p[2] = HSVToRGB(lutH[h], lutS[s], lutV[v], (i/3)%w < simd)
	}
}
