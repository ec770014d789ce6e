package imgproc

// Autocontrast and Equalize as torchvision's (and PIL's): per-channel
// tables from each channel's range or histogram. On RGB, every channel's
// statistics are gathered in one pass over the pixels and applied in
// another, rather than a strided pass per channel each.

// Autocontrast stretches each channel's range to [0, 255] (an even
// channel stays).
func Autocontrast(img []byte, ch int) {
	if ch != 3 {
		autocontrastChannels(img, ch)
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

// Equalize equalises each channel's histogram with PIL's table, which
// torchvision reproduces: integer arithmetic, so exact.
func Equalize(img []byte, ch int) {
	if ch != 3 {
		equalizeChannels(img, ch)
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

// autocontrastChannels is Autocontrast a channel at a time.
func autocontrastChannels(img []byte, ch int) {
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
		lut[x] = TruncU8(float32(float32(x)-minimum) / inv)
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

// equalizeChannels is Equalize a channel at a time.
func equalizeChannels(img []byte, ch int) {
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
