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
		minimum, inv := float32(lo[c]), float32(float32(hi[c]-lo[c])*float32(1.0/255))
		if lo[c] == hi[c] {
			minimum, inv = 0, 1
		}
		for x := range luts[c] {
			luts[c][x] = truncU8(float32(float32(x)-minimum) / inv)
		}
	}
	apply3(img, &luts)
}

// equalize is tvEqualize.
func equalize(img []byte, ch int) {
	if ch != 3 {
		tvEqualize(img, ch)
		return
	}
	var hist [3][256]int32
	for i := 0; i+2 < len(img); i += 3 {
		p := img[i : i+3 : i+3]
		hist[0][p[0]]++
		hist[1][p[1]]++
		hist[2][p[2]]++
	}
	n := len(img) / 3
	var luts [3][256]byte
	for c := range luts {
		lut := &luts[c]
		last := 255
		for last > 0 && hist[c][last] == 0 {
			last--
		}
		step := (n - int(hist[c][last])) / 255
		if step == 0 { // the channel stays
			for x := range lut {
				lut[x] = byte(x)
			}
			continue
		}
		cum := 0
		for x := 1; x < 256; x++ {
			cum += int(hist[c][x-1])
			lut[x] = byte(min((cum+step/2)/step, 255))
		}
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
