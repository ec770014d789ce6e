package pipeline

// The policies' AutoContrast and Equalize on RGB: tvAutocontrast's and
// tvEqualize's tables, with every channel's statistics gathered in one pass
// over the pixels and applied in another, rather than a strided pass per
// channel each. Other channel counts take the per-channel versions.

// autocontrast is tvAutocontrast.
func autocontrast(img []byte, ch int) {
	if ch != 3 {
		tvAutocontrast(img, ch)
		return
	}
	// Marking the values seen has no dependency from pixel to pixel, unlike
	// running minima and maxima.
	var seen [3][256]bool
	for i := 0; i+2 < len(img); i += 3 {
		p := img[i : i+3 : i+3]
		seen[0][p[0]], seen[1][p[1]], seen[2][p[2]] = true, true, true
	}
	lo, hi := [3]byte{255, 255, 255}, [3]byte{}
	for c := range seen {
		for x := 255; x >= 0; x-- {
			if seen[c][x] {
				lo[c] = byte(x)
			}
			if seen[c][255-x] {
				hi[c] = byte(255 - x)
			}
		}
	}
	var luts [3][256]byte
	for c := range luts {
		luts[c] = autocontrastLUT(lo[c], hi[c])
	}
	apply3(img, &luts)
}

// equalize is tvEqualize.
func equalize(img []byte, ch int) {
	if ch != 3 {
		tvEqualize(img, ch)
		return
	}
	var hist [3][256]int
	for i := 0; i+2 < len(img); i += 3 {
		p := img[i : i+3 : i+3]
		hist[0][p[0]]++
		hist[1][p[1]]++
		hist[2][p[2]]++
	}
	var luts [3][256]byte
	for c := range luts {
		lut, ok := equalizeLUT(&hist[c], len(img)/3)
		if !ok { // the channel stays
			for x := range lut {
				lut[x] = byte(x)
			}
		}
		luts[c] = lut
	}
	apply3(img, &luts)
}

// apply3 maps each RGB channel through its table.
func apply3(img []byte, luts *[3][256]byte) {
	for i := 0; i+2 < len(img); i += 3 {
		p := img[i : i+3 : i+3]
		p[0], p[1], p[2] = luts[0][p[0]], luts[1][p[1]], luts[2][p[2]]
	}
}
