package imgproc

import "math"

// OpenCV's warps (cv2.warpAffine, cv2.warpPerspective) with INTER_LINEAR
// and BORDER_CONSTANT on uint8 images, as YOLO's RandomPerspective calls
// them: the forward matrix is inverted in float64, each output pixel's
// source coordinate is rounded to 1/32 pixel (INTER_BITS = 5), and the four
// neighbours are mixed with 15-bit fixed-point weights from that fraction.
// That is OpenCV up to 4.10; 4.11's SIMD kernels interpolate in float32 at
// unrounded coordinates instead, a level or two apart on sharp edges.

const (
	cvInterBits = 5
	cvTabSize   = 1 << cvInterBits
	cvABBits    = 10 // warpAffine's fixed point
	cvCoefBits  = 15 // the weights' fixed point
)

// WarpAffineCV is cv2.warpAffine(src, m, (dw, dh), flags=INTER_LINEAR,
// borderValue=fill) of the sh×sw image src (ch channels) into the dh×dw
// dst; m is the forward 2×3 matrix.
func WarpAffineCV(dst []byte, dh, dw int, src []byte, sh, sw, ch int, m [6]float64, fill []byte) {
	// invertAffineTransform.
	d := m[0]*m[4] - m[1]*m[3]
	if d != 0 {
		d = 1 / d
	}
	a11, a22, a12, a21 := m[4]*d, m[0]*d, -m[1]*d, -m[3]*d
	b1 := -float64(a11*m[2]) - float64(a12*m[5])
	b2 := -float64(a21*m[2]) - float64(a22*m[5])
	const abScale = 1 << cvABBits
	const roundDelta = abScale / cvTabSize / 2
	adelta, bdelta := make([]int32, dw), make([]int32, dw)
	for x := range adelta {
		adelta[x] = cvRound(float64(a11*float64(x)) * abScale)
		bdelta[x] = cvRound(float64(a21*float64(x)) * abScale)
	}
	for y := 0; y < dh; y++ {
		x0 := cvRound(float64(float64(a12*float64(y))+b1)*abScale) + roundDelta
		y0 := cvRound(float64(float64(a22*float64(y))+b2)*abScale) + roundDelta
		row := dst[y*dw*ch : (y+1)*dw*ch]
		if ch == 3 && haveWarpC && len(src) >= sh*sw*3 {
			warpRow3C(row, src, sh, sw, x0, y0, adelta, bdelta, fill)
			continue
		}
		if ch == 3 {
			warpRow3(row, src, sh, sw, x0, y0, adelta, bdelta, fill)
			continue
		}
		for x := 0; x < dw; x++ {
			X := (x0 + adelta[x]) >> (cvABBits - cvInterBits)
			Y := (y0 + bdelta[x]) >> (cvABBits - cvInterBits)
			cvBilinear(row[x*ch:(x+1)*ch], src, sh, sw, ch, X, Y, fill)
		}
	}
}

// warpRow3 is one output row of WarpAffineCV for RGB images: cvBilinear's
// arithmetic, inlined for pixels whose four neighbours are inside the
// image (the weights sum to 2¹⁵, so no result needs clamping).
func warpRow3(row, src []byte, sh, sw int, x0, y0 int32, adelta, bdelta []int32, fill []byte) {
	const half = 1 << (cvCoefBits - 1)
	stride := 3 * sw
	for x := range adelta {
		X := (x0 + adelta[x]) >> (cvABBits - cvInterBits)
		Y := (y0 + bdelta[x]) >> (cvABBits - cvInterBits)
		sx, sy := int(X>>cvInterBits), int(Y>>cvInterBits)
		o := row[3*x : 3*x+3 : 3*x+3]
		if uint(sx) >= uint(sw-1) || uint(sy) >= uint(sh-1) {
			cvBilinear(o, src, sh, sw, 3, X, Y, fill)
			continue
		}
		ax, ay := X&(cvTabSize-1), Y&(cvTabSize-1)
		w0 := (cvTabSize - ay) * (cvTabSize - ax) * 32
		w1 := (cvTabSize - ay) * ax * 32
		w2 := ay * (cvTabSize - ax) * 32
		w3 := ay * ax * 32
		i := sy*stride + 3*sx
		p := src[i : i+6 : i+6]
		q := src[i+stride : i+stride+6 : i+stride+6]
		o[0] = byte((int32(p[0])*w0 + int32(p[3])*w1 + int32(q[0])*w2 + int32(q[3])*w3 + half) >> cvCoefBits)
		o[1] = byte((int32(p[1])*w0 + int32(p[4])*w1 + int32(q[1])*w2 + int32(q[4])*w3 + half) >> cvCoefBits)
		o[2] = byte((int32(p[2])*w0 + int32(p[5])*w1 + int32(q[2])*w2 + int32(q[5])*w3 + half) >> cvCoefBits)
	}
}

// WarpPerspectiveCV is cv2.warpPerspective(src, m, (dw, dh),
// flags=INTER_LINEAR, borderValue=fill); m is the forward 3×3 matrix,
// row-major.
func WarpPerspectiveCV(dst []byte, dh, dw int, src []byte, sh, sw, ch int, m [9]float64, fill []byte) {
	inv := cvInvert3(m)
	// OpenCV steps x from the start of blocks of bw0 columns.
	bh0 := min(16, dh)
	bw0 := dw
	if bh0 > 0 {
		bw0 = min(32*32/bh0, dw)
	}
	for y := 0; y < dh; y++ {
		row := dst[y*dw*ch : (y+1)*dw*ch]
		fy := float64(y)
		for xb := 0; xb < dw; xb += bw0 {
			fx := float64(xb)
			X0 := float64(inv[0]*fx) + float64(inv[1]*fy) + inv[2]
			Y0 := float64(inv[3]*fx) + float64(inv[4]*fy) + inv[5]
			W0 := float64(inv[6]*fx) + float64(inv[7]*fy) + inv[8]
			for x1 := 0; x1 < bw0 && xb+x1 < dw; x1++ {
				f1 := float64(x1)
				W := W0 + float64(inv[6]*f1)
				if W != 0 {
					W = cvTabSize / W
				}
				X := cvRound(max(math.MinInt32, min(math.MaxInt32, float64(X0+float64(inv[0]*f1))*W)))
				Y := cvRound(max(math.MinInt32, min(math.MaxInt32, float64(Y0+float64(inv[3]*f1))*W)))
				x := xb + x1
				cvBilinear(row[x*ch:(x+1)*ch], src, sh, sw, ch, X, Y, fill)
			}
		}
	}
}

// cvInvert3 is cv::invert's direct 3×3 inverse (float64); zeros where
// singular.
func cvInvert3(m [9]float64) [9]float64 {
	at := func(i, j int) float64 { return m[3*i+j] }
	// Conversions round each product: no fused multiply-add on any CPU.
	d := float64(at(0, 0)*(float64(at(1, 1)*at(2, 2))-float64(at(1, 2)*at(2, 1)))) -
		float64(at(0, 1)*(float64(at(1, 0)*at(2, 2))-float64(at(1, 2)*at(2, 0)))) +
		float64(at(0, 2)*(float64(at(1, 0)*at(2, 1))-float64(at(1, 1)*at(2, 0))))
	if d == 0 {
		return [9]float64{}
	}
	d = 1 / d
	c := func(a, b, e, f float64) float64 { return (float64(a*b) - float64(e*f)) * d }
	return [9]float64{
		c(at(1, 1), at(2, 2), at(1, 2), at(2, 1)), c(at(0, 2), at(2, 1), at(0, 1), at(2, 2)), c(at(0, 1), at(1, 2), at(0, 2), at(1, 1)),
		c(at(1, 2), at(2, 0), at(1, 0), at(2, 2)), c(at(0, 0), at(2, 2), at(0, 2), at(2, 0)), c(at(0, 2), at(1, 0), at(0, 0), at(1, 2)),
		c(at(1, 0), at(2, 1), at(1, 1), at(2, 0)), c(at(0, 1), at(2, 0), at(0, 0), at(2, 1)), c(at(0, 0), at(1, 1), at(0, 1), at(1, 0)),
	}
}

// cvRound is OpenCV's saturate_cast<int>(double): round half to even,
// saturated to int32.
func cvRound(v float64) int32 {
	r := math.RoundToEven(v)
	switch {
	case r >= math.MaxInt32:
		return math.MaxInt32
	case r <= math.MinInt32 || math.IsNaN(r):
		return math.MinInt32
	}
	return int32(r)
}

// cvBilinear writes the pixel at fixed-point source coordinate (X, Y)
// (INTER_BITS fractional bits) into o, as remap's INTER_LINEAR with
// BORDER_CONSTANT: neighbours outside the image read fill.
func cvBilinear(o, src []byte, sh, sw, ch int, X, Y int32, fill []byte) {
	sx, sy := int(X>>cvInterBits), int(Y>>cvInterBits)
	ax, ay := int32(X&(cvTabSize-1)), int32(Y&(cvTabSize-1))
	// The weights: (1-a)·(1-b) and so on in 1/1024, scaled to 15 bits.
	w0 := (cvTabSize - ay) * (cvTabSize - ax) * 32
	w1 := (cvTabSize - ay) * ax * 32
	w2 := ay * (cvTabSize - ax) * 32
	w3 := ay * ax * 32
	const half = 1 << (cvCoefBits - 1)
	if uint(sx) < uint(sw-1) && uint(sy) < uint(sh-1) {
		p := src[(sy*sw+sx)*ch:]
		q := src[((sy+1)*sw+sx)*ch:]
		for c := range o {
			v := int32(p[c])*w0 + int32(p[c+ch])*w1 + int32(q[c])*w2 + int32(q[c+ch])*w3
			o[c] = satU8((v + half) >> cvCoefBits)
		}
		return
	}
	if sx >= sw || sx+1 < 0 || sy >= sh || sy+1 < 0 {
		copy(o, fill[:ch])
		return
	}
	px := func(x, y, c int) int32 {
		if x >= 0 && y >= 0 && x < sw && y < sh {
			return int32(src[(y*sw+x)*ch+c])
		}
		return int32(fill[c])
	}
	for c := range o {
		v := px(sx, sy, c)*w0 + px(sx+1, sy, c)*w1 + px(sx, sy+1, c)*w2 + px(sx+1, sy+1, c)*w3
		o[c] = satU8((v + half) >> cvCoefBits)
	}
}

func satU8(v int32) byte {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return byte(v)
}
