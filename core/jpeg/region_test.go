package jpeg

import (
	"bytes"
	"image"
	"math/rand/v2"
	"strings"
	"testing"
)

// regionDecode is decodeRegion with region streams on or off: the geometry
// and the decoded bytes, and whether a region stream was cut.
func regionDecode(t *testing.T, d *Decoder, data []byte, crop image.Rectangle, out int, cut bool) (ffjGeom, []byte, bool, error) {
	t.Helper()
	d.cutRegions(cut)
	defer d.cutRegions(true)
	buf, err := d.decodeRegion(data, crop, out, out)
	if err != nil {
		return d.g, nil, false, err
	}
	n := int(d.g.buf_w) * int(d.g.buf_h) * 3
	return d.g, append([]byte(nil), buf[:n]...), d.regionCut(), nil
}

// A region stream decodes to exactly the bytes the whole scan gives, for
// every sampling, restart interval, scale and crop, edges and partial MCUs
// included; intervals that do not line up with MCU rows fall back.
func TestRegionStreamMatchesWholeScan(t *testing.T) {
	p := loadPhoto(t)
	// 389×297: partial MCUs at the right and bottom (and 25 MCUs per
	// 4:2:0 row, so 5 lines up and 4 does not).
	const w, h = 389, 297
	rgb := make([]byte, w*h*3)
	for y := 0; y < h; y++ {
		copy(rgb[y*w*3:(y+1)*w*3], p.src[y*p.w*3:])
	}
	gray := make([]byte, w*h)
	for i := range gray {
		gray[i] = rgb[3*i+1]
	}
	cmyk := rgbToCMYK(rgb)
	for _, tt := range []struct {
		name string
		pix  []byte
		o    encodeOptions
		cuts bool // whether some crops must be cut
	}{
		{"420 writer's interval", rgb, encodeOptions{subsample: true}, true},
		{"420 every MCU", rgb, encodeOptions{subsample: true, restart: 1}, true},
		{"420 five MCUs", rgb, encodeOptions{subsample: true, restart: 5}, true},
		{"420 one row", rgb, encodeOptions{subsample: true, restart: 25}, true},
		{"420 two rows", rgb, encodeOptions{subsample: true, restart: 50}, true},
		{"420 not lined up", rgb, encodeOptions{subsample: true, restart: 4}, false},
		{"420 none", rgb, encodeOptions{subsample: true, restart: -1}, false},
		{"444", rgb, encodeOptions{restart: 7}, true},
		{"422", rgb, encodeOptions{hs: 2, vs: 1, restart: 1}, true},
		{"440", rgb, encodeOptions{hs: 1, vs: 2, restart: 7}, true},
		{"gray", gray, encodeOptions{gray: true, restart: 7}, true},
		{"cmyk", cmyk, encodeOptions{cmyk: true, restart: 7}, true},
		{"ycck 420", cmyk, encodeOptions{cmyk: true, ycck: true, subsample: true, restart: 5}, true},
		{"progressive", rgb, encodeOptions{subsample: true, progressive: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			enc := encodeT(t, tt.pix, w, h, 90, tt.o)
			d := NewDecoder()
			defer d.Close()
			rng := rand.New(rand.NewPCG(1, uint64(len(tt.name))))
			crops := []image.Rectangle{
				image.Rect(0, 0, w, h), image.Rect(0, 0, 1, 1), image.Rect(w-1, h-1, w, h),
				image.Rect(16, 16, 17, 17), image.Rect(15, 15, 33, 33), image.Rect(w-40, 100, w, h),
				image.Rect(0, h-30, 50, h), image.Rect(100, 0, 300, 20),
			}
			for len(crops) < 120 {
				x0, y0 := rng.IntN(w), rng.IntN(h)
				crops = append(crops, image.Rect(x0, y0, x0+1+rng.IntN(w-x0), y0+1+rng.IntN(h-y0)))
			}
			cut := 0
			for _, crop := range crops {
				for _, out := range []int{224, 64, 40, 25, 8} { // scales 8, 4, 3, 2, 1 for the bigger crops
					g0, want, _, err := regionDecode(t, d, enc, crop, out, false)
					if err != nil {
						t.Fatal(err)
					}
					g1, got, used, err := regionDecode(t, d, enc, crop, out, true)
					if err != nil {
						t.Fatalf("%v at %d: %v", crop, out, err)
					}
					if used {
						cut++
					}
					if g0 != g1 {
						t.Fatalf("%v at %d: geometry %+v, whole scan %+v", crop, out, g1, g0)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("%v at %d (scale %d/8, cut %t): pixels differ from the whole scan's", crop, out, g1.scale_num, used)
					}
				}
			}
			if tt.cuts != (cut > 0) {
				t.Fatalf("%d of %d decodes cut a region stream", cut, 5*len(crops))
			}
		})
	}
}

// Damage to the restart markers is reported as the whole-scan decode
// reports it, and so is damage inside the intervals a crop decodes.
func TestRegionStreamDamage(t *testing.T) {
	p := loadPhoto(t)
	enc := encodeT(t, p.src, p.w, p.h, 90, encodeOptions{subsample: true, restart: 1})
	var rst []int
	for i := 0; i+1 < len(enc); i++ {
		if enc[i] == 0xFF && enc[i+1] >= 0xD0 && enc[i+1] <= 0xD7 {
			rst = append(rst, i)
		}
	}
	if want := 25*19 - 1; len(rst) != want {
		t.Fatalf("%d restart markers, want %d", len(rst), want)
	}
	crop := image.Rect(200, 150, 300, 250) // MCU rows 9..15, columns 12..18
	renumbered := bytes.Clone(enc)
	renumbered[rst[100]+1] ^= 1 // row 4: above the crop
	truncated := enc[:rst[25*12+15]]
	zeroed := bytes.Clone(enc)
	for i := rst[25*12+13] + 2; i < rst[25*12+14]; i++ {
		zeroed[i] = 0xFF // no valid Huffman code
	}
	d := NewDecoder()
	defer d.Close()
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"marker out of sequence above the crop", renumbered, "Corrupt JPEG data"},
		{"truncated inside the crop", truncated, "Premature end of JPEG file"},
		{"garbage inside the crop", zeroed, "JPEG"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, cut := range []bool{false, true} {
				_, _, used, err := regionDecode(t, d, tt.data, crop, 64, cut)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("cut %t: got %v, want an error with %q", cut, err, tt.want)
				}
				if used {
					t.Fatalf("cut %t: a region stream was decoded", cut)
				}
			}
		})
	}
	// Bit errors inside the crop: the Huffman decoding drifts, so the
	// interval no longer ends at its marker, which libjpeg reports. In a
	// file without restart markers they decode to wrong pixels.
	flippedBits := bytes.Clone(enc)
	k := 12*25 + 14 // row 12, column 14: inside the crop, a marker after it
	for i := rst[k-1] + 4; i < rst[k]-2; i += 3 {
		if b := flippedBits[i] ^ 0x21; flippedBits[i] != 0xFF && b != 0xFF {
			flippedBits[i] = b
		}
	}
	if _, _, _, err := regionDecode(t, d, flippedBits, crop, 64, true); err == nil || !strings.Contains(err.Error(), "Corrupt JPEG data") {
		t.Fatalf("bit errors inside the crop: got %v", err)
	}
	// A header claiming 65500×65500 pixels in one-MCU intervals (16.7 M of
	// them) over a few KiB of data: the interval table grows only with the
	// markers actually found, and the decode fails on the missing data.
	huge := bytes.Clone(enc)
	sof := bytes.Index(huge, []byte{0xFF, 0xC0})
	copy(huge[sof+5:], []byte{0xFF, 0xDC, 0xFF, 0xDC})
	fresh := NewDecoder()
	defer fresh.Close()
	if _, _, _, err := regionDecode(t, fresh, huge, image.Rect(60000, 60000, 60100, 60100), 64, true); err == nil {
		t.Fatal("a 65500×65500 header over a 400×300 scan decoded")
	}
	if n := fresh.regionTableCap(); n > 2*len(rst) {
		t.Fatalf("the interval table has room for %d intervals; the data has %d markers", n, len(rst))
	}
	// The undamaged file does cut this crop.
	if _, _, used, err := regionDecode(t, d, enc, crop, 64, true); err != nil || !used {
		t.Fatalf("undamaged: cut %t, %v", used, err)
	}
}

// Bit errors in any one restart interval never decode to pixels the whole
// scan would not give: where libjpeg's decode of the whole scan reports the
// damage, the region stream does too, or its pixels are the undamaged ones
// (the damage lies outside it). JPEG has no checksum, so some damage decodes
// cleanly either way. libjpeg never checked the last interval of a region
// stream (no marker follows it); the region Huffman decoder checks them all.
func TestRegionStreamDamageEveryInterval(t *testing.T) {
	p := loadPhoto(t)
	d := NewDecoder()
	defer d.Close()
	for _, restart := range []int{1, 0} { // one MCU; the writer's choice
		enc := encodeT(t, p.src, p.w, p.h, 90, encodeOptions{subsample: true, restart: restart})
		var rst []int
		for i := 0; i+1 < len(enc); i++ {
			if enc[i] == 0xFF && enc[i+1] >= 0xD0 && enc[i+1] <= 0xD7 {
				rst = append(rst, i)
			}
		}
		for _, crop := range []image.Rectangle{image.Rect(200, 150, 300, 250), image.Rect(0, 0, 130, 90), image.Rect(250, 180, p.w, p.h)} {
			_, clean, used, err := regionDecode(t, d, enc, crop, 64, true)
			if err != nil || !used {
				t.Fatalf("restart %d, crop %v: cut %t, %v", restart, crop, used, err)
			}
			var caught int
			for k := 1; k < len(rst); k++ {
				bad := bytes.Clone(enc)
				for i := rst[k-1] + 4; i < rst[k]-2; i += 3 {
					if b := bad[i] ^ 0x21; bad[i] != 0xFF && b != 0xFF {
						bad[i] = b
					}
				}
				_, got, _, err := regionDecode(t, d, bad, crop, 64, true)
				_, whole, _, wholeErr := regionDecode(t, d, bad, crop, 64, false)
				switch {
				case err != nil:
					if !strings.Contains(err.Error(), "Corrupt JPEG data") {
						t.Fatalf("restart %d, crop %v, interval %d: %v", restart, crop, k, err)
					}
					if wholeErr != nil {
						caught++
					}
				case wholeErr != nil && !bytes.Equal(got, clean):
					t.Fatalf("restart %d, crop %v: bit errors in interval %d decoded to wrong pixels (the whole scan: %v)", restart, crop, k, wholeErr)
				case wholeErr == nil && !bytes.Equal(got, whole):
					t.Fatalf("restart %d, crop %v, interval %d: the region and the whole scan decode differently", restart, crop, k)
				}
			}
			if caught == 0 {
				t.Fatalf("restart %d, crop %v: no damage caught", restart, crop)
			}
		}
	}
}
