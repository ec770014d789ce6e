package jpeg

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"slices"
	"strings"
	"testing"
)

// decodeT decodes b or fails the test.
func decodeT(t *testing.T, d *Decoder, b []byte, w, h int) []byte {
	t.Helper()
	pix := make([]byte, w*h*3)
	gw, gh, err := d.Decode(b, pix)
	if err != nil {
		t.Fatal(err)
	}
	if gw != w || gh != h {
		t.Fatalf("decoded %dx%d, want %dx%d", gw, gh, w, h)
	}
	return pix
}

// TestTranscode checks the DCT-domain re-encode against the pixel one
// (decode, then Encode at the same quality): same size and sampling, no
// worse fidelity to the source, and a source already at the quality or
// coarser comes through with its pixels unchanged.
func TestTranscode(t *testing.T) {
	p := loadPhoto(t)
	odd := p.src[:401*299*3] // any 401x299 pixels will do
	cases := []struct {
		name      string
		pix       []byte
		w, h, q   int
		o         encodeOptions
		unchanged bool // source tables no finer than the target's
	}{
		{"q95 to q90", p.src, p.w, p.h, 95, encodeOptions{subsample: true}, false},
		{"q100 to q90", p.src, p.w, p.h, 100, encodeOptions{subsample: true}, false},
		{"q90 to q90", p.src, p.w, p.h, 90, encodeOptions{subsample: true}, true},
		{"q50 to q90", p.src, p.w, p.h, 50, encodeOptions{subsample: true}, true},
		{"progressive q95", p.src, p.w, p.h, 95, encodeOptions{subsample: true, progressive: true}, false},
		{"progressive q50", p.src, p.w, p.h, 50, encodeOptions{subsample: true, progressive: true}, true},
		{"odd size q95", odd, 401, 299, 95, encodeOptions{subsample: true}, false},
	}
	d := NewDecoder()
	defer d.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := encodeT(t, c.pix, c.w, c.h, c.q, c.o)
			srcPix := decodeT(t, d, src, c.w, c.h)
			got, err := d.Transcode(src, 90, false)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(got, []byte{0xFF, 0xC0}) || bytes.Contains(got, []byte{0xFF, 0xC2}) {
				t.Error("transcoded file is not baseline")
			}
			gotPix := decodeT(t, d, got, c.w, c.h)
			if c.unchanged {
				if !bytes.Equal(gotPix, srcPix) {
					m, mx := stats(gotPix, srcPix)
					t.Errorf("pixels changed (mean %.3f, max %d); the source needed no requantizing", m, mx)
				}
				return
			}
			viaPix := encodeT(t, srcPix, c.w, c.h, 90, encodeOptions{subsample: true})
			via := decodeT(t, d, viaPix, c.w, c.h)
			pt, pp := psnr(gotPix, srcPix), psnr(via, srcPix)
			if pt < pp-0.1 {
				t.Errorf("PSNR to the source %.2f dB, pixel re-encode %.2f dB", pt, pp)
			}
			// Keeping more of the source costs some bytes (about 10-15% on photos).
			if n, m := len(got), len(viaPix); n > m*5/4 {
				t.Errorf("transcoded to %d bytes, pixel re-encode %d", n, m)
			}
			t.Logf("PSNR to source: transcode %.2f dB, re-encode %.2f dB; %d vs %d bytes", pt, pp, len(got), len(viaPix))
		})
	}
}

// TestTranscodeKeepsScan: a source whose steps need no requantizing keeps
// its own entropy-coded scan; its metadata segments and anything after EOI
// go, and a corrupt scan is still an error.
func TestTranscodeKeepsScan(t *testing.T) {
	p := loadPhoto(t)
	src := encodeT(t, p.src, p.w, p.h, 85, encodeOptions{subsample: true})
	seg := func(marker byte, body string) []byte {
		n := len(body) + 2
		return append([]byte{0xFF, marker, byte(n >> 8), byte(n)}, body...)
	}
	sos := bytes.Index(src, []byte{0xFF, 0xDA})
	var withMeta []byte
	withMeta = append(withMeta, src[:2]...)
	withMeta = append(withMeta, seg(0xE1, "Exif\x00\x00 orientation and camera")...)
	withMeta = append(withMeta, 0xFF, 0xFF) // fill bytes may precede a marker
	withMeta = append(withMeta, seg(0xFE, "a comment")...)
	withMeta = append(withMeta, src[2:]...)
	withMeta = append(withMeta, "trailing bytes after EOI"...)

	d := NewDecoder()
	defer d.Close()
	got, err := d.Transcode(withMeta, 90, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(got, src[sos:]) {
		t.Error("the source's scan was not kept as it is, up to EOI")
	}
	if len(got) != len(src) || bytes.Contains(got, []byte("Exif")) || bytes.Contains(got, []byte("a comment")) {
		t.Errorf("kept %d bytes, want the %d of the source without its APP1 and COM segments", len(got), len(src))
	}
	if !bytes.Equal(decodeT(t, d, got, p.w, p.h), decodeT(t, d, src, p.w, p.h)) {
		t.Error("pixels differ from the source's")
	}

	bad := bytes.Clone(src)
	for i := sos + 200; i < sos+260; i++ {
		bad[i] = 0xFF // markers inside the entropy-coded data
	}
	if _, err := d.Transcode(bad, 90, false); err == nil {
		t.Error("a corrupt scan was kept")
	}
	if _, err := d.Transcode(src[:len(src)*2/3], 90, false); err == nil {
		t.Error("a truncated scan was kept")
	}
}

// TestTranscodeLeavesOthers: only what Encode itself produces (4:2:0
// YCbCr) is transcoded; other JPEGs are left to a pixel re-encode.
func TestTranscodeLeavesOthers(t *testing.T) {
	p := loadPhoto(t)
	gray := make([]byte, p.w*p.h)
	for i := range gray {
		gray[i] = p.src[3*i+1]
	}
	cases := []struct {
		name string
		pix  []byte
		o    encodeOptions
	}{
		{"4:4:4", p.src, encodeOptions{}},
		{"4:2:2", p.src, encodeOptions{hs: 2, vs: 1}},
		{"grayscale", gray, encodeOptions{gray: true}},
		{"CMYK", rgbToCMYK(p.src), encodeOptions{cmyk: true}},
		{"YCCK", rgbToCMYK(p.src), encodeOptions{cmyk: true, ycck: true}},
	}
	d := NewDecoder()
	defer d.Close()
	for _, c := range cases {
		src := encodeT(t, c.pix, p.w, p.h, 95, c.o)
		if _, err := d.Transcode(src, 90, false); !errors.Is(err, ErrNotTranscodable) {
			t.Errorf("%s: Transcode gave %v, want ErrNotTranscodable", c.name, err)
		}
		if err := d.Verify(src); err != nil {
			t.Errorf("%s: Verify: %v", c.name, err)
		}
	}
	if _, err := d.Transcode(p.jpeg, 0, false); err == nil {
		t.Error("quality 0 accepted")
	}
}

// TestRequantizeExact: the vectorized float32 requantization gives exactly
// the integer rounding, floor((|c|·from + to/2) / to) with c's sign, for
// every coefficient value and step pairs over the whole 8-bit range
// (to >= from), and the integer fallback does for 16-bit steps.
func TestRequantizeExact(t *testing.T) {
	const blocks = 65536 / 64 // every int16
	coef := make([]int16, blocks*64)
	var pairs [][2]uint16
	for to := uint16(1); to <= 255; to++ {
		for _, from := range []uint16{1, to/2 + 1, to} {
			pairs = append(pairs, [2]uint16{from, to})
		}
	}
	pairs = append(pairs, [2]uint16{1, 256}, [2]uint16{255, 1000}, [2]uint16{300, 65535})
	for _, p := range pairs {
		var from, to [64]uint16
		for k := range from {
			// Vary the steps within a block too: each tap gets its own pair.
			from[k], to[k] = p[0], p[1]
			if k%2 == 1 {
				from[k] = max(1, p[0]/2)
			}
		}
		for i := range coef {
			coef[i] = int16(i - 32768)
		}
		in := slices.Clone(coef)
		want := make([]int16, len(coef))
		for i, c := range coef {
			k := i % 64
			a := int64(c)
			if a < 0 {
				a = -a
			}
			q := (a*int64(from[k]) + int64(to[k]/2)) / int64(to[k])
			if c < 0 {
				q = -q
			}
			want[i] = int16(q)
		}
		requantize(coef, &from, &to)
		for i := range coef {
			if coef[i] != want[i] {
				t.Fatalf("from %d to %d: coefficient %d: got %d, want %d", from[i%64], to[i%64], in[i], coef[i], want[i])
			}
		}
	}
}

// TestCoefsFit: the range check before re-encoding accepts what 8-bit
// baseline Huffman coding holds and nothing more, wherever the value is.
func TestCoefsFit(t *testing.T) {
	for _, tc := range []struct {
		k    int // coefficient index in the block (0: DC)
		v    int16
		want bool
	}{
		{0, -1024, true}, {0, 1023, true}, {0, -1025, false}, {0, 1024, false},
		{1, 1023, true}, {1, -1023, true}, {1, 1024, false}, {1, -1024, false},
		{63, 1023, true}, {63, -1024, false}, {17, 32767, false}, {17, -32768, false},
	} {
		for _, block := range []int{0, 2} {
			coef := make([]int16, 3*64)
			coef[block*64+tc.k] = tc.v
			if got := coefsFit(coef); got != tc.want {
				t.Errorf("coefficient %d = %d in block %d: fits %v, want %v", tc.k, tc.v, block, got, tc.want)
			}
		}
	}
}

// restartInterval returns the restart interval a JPEG's DRI segment sets
// before its scan, or 0.
func restartInterval(data []byte) int {
	sos := bytes.Index(data, []byte{0xFF, 0xDA})
	if i := bytes.Index(data[:max(sos, 0)], []byte{0xFF, 0xDD, 0x00, 0x04}); i >= 0 {
		return int(data[i+4])<<8 | int(data[i+5])
	}
	return 0
}

// TestTranscodeRestartMarkers: the writer's JPEGs have restart intervals
// that line up with MCU rows, so the loader can cut crops out of them. A
// source scan is kept only when its own intervals line up; one without
// markers gets them spliced in; otherwise the coefficients are
// Huffman-coded again, with the pixels unchanged.
func TestTranscodeRestartMarkers(t *testing.T) {
	p := loadPhoto(t) // 400×300: 25 MCUs per 4:2:0 row
	d := NewDecoder()
	defer d.Close()
	for _, tt := range []struct {
		name     string
		restart  int
		keepScan bool
		kept     bool
		spliced  bool
	}{
		{"none", -1, false, false, true},
		{"not lined up", 4, false, false, false},
		{"five MCUs", 5, false, true, false},
		{"one row", 25, false, true, false},
		{"none, keepScan", -1, true, true, false},
		{"not lined up, keepScan", 4, true, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := encodeT(t, p.src, p.w, p.h, 90, encodeOptions{subsample: true, restart: tt.restart})
			got, err := d.Transcode(src, 90, tt.keepScan)
			if err != nil {
				t.Fatal(err)
			}
			sos := bytes.Index(src, []byte{0xFF, 0xDA})
			if kept := bytes.HasSuffix(got, src[sos:]); kept != tt.kept {
				t.Fatalf("scan kept %t, want %t", kept, tt.kept)
			}
			if spliced := d.transcodeSpliced(); spliced != tt.spliced {
				t.Fatalf("markers spliced in %t, want %t", spliced, tt.spliced)
			}
			if !bytes.Equal(decodeT(t, d, got, p.w, p.h), decodeT(t, d, src, p.w, p.h)) {
				t.Fatal("pixels differ from the source's")
			}
			if tt.kept && tt.keepScan {
				return // the source's markers, if any, are what they are
			}
			if r := restartInterval(got); r == 0 || 25%r != 0 {
				t.Fatalf("restart interval %d does not line up with 25 MCUs a row", r)
			}
			if _, _, cut, err := regionDecode(t, d, got, image.Rect(150, 100, 300, 250), 64, true); err != nil || !cut {
				t.Fatalf("a crop of the result: cut %t, %v", cut, err)
			}
		})
	}
	// Encode, the pixel path, writes lined-up intervals too.
	for _, w := range []int{400, 368, 23 * 16, 13} {
		enc := encodeT(t, p.src[:w*100*3], w, 100, 90, encodeOptions{subsample: true})
		mw := (w + 15) / 16
		if r := restartInterval(enc); r == 0 || mw%r != 0 || r > 4 {
			t.Errorf("width %d (%d MCUs): restart interval %d", w, mw, r)
		}
	}
}

// A scan without restart markers gets them spliced in, not re-encoded: the
// same coefficients (so the same pixels, through libjpeg and through the
// region decoder), intervals that line up with MCU rows, at any size and
// quality. The source's Huffman tables stay, except that DC tables made
// for the image (which lack codes for the absolute values an interval
// starts with) give way to the standard one, every DC coded again. A
// damaged scan goes to libjpeg, which reports the damage, as before.
func TestTranscodeSplice(t *testing.T) {
	p := loadPhoto(t)
	d := NewDecoder()
	defer d.Close()
	stdDC := []byte{0xFF, 0xC4, 0, 31, 0, 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	for _, tt := range []struct {
		w, h, q int
		ri      int // the interval wanted: the largest of 4..1 dividing the MCUs per row
	}{
		{400, 300, 90, 1}, // 25 MCUs a row
		{389, 297, 90, 1}, // partial MCUs right and bottom
		{384, 296, 97, 4}, // 24 MCUs; q97 stuffs many 0xFF bytes
		{352, 64, 75, 2},  // 22 MCUs
		{13, 100, 90, 1},  // one MCU a row
		{48, 40, 90, 3},
	} {
		src := make([]byte, tt.w*tt.h*3)
		for y := 0; y < tt.h; y++ {
			copy(src[y*tt.w*3:(y+1)*tt.w*3], p.src[y*p.w*3:])
		}
		for _, optimize := range []bool{false, true} {
			name := fmt.Sprintf("%dx%d q%d optimize %t", tt.w, tt.h, tt.q, optimize)
			enc := encodeT(t, src, tt.w, tt.h, tt.q, encodeOptions{subsample: true, optimize: optimize, restart: -1})
			got, err := d.Transcode(enc, tt.q, false)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !d.transcodeSpliced() {
				t.Fatalf("%s: not spliced", name)
			}
			if r := restartInterval(got); r != tt.ri {
				t.Fatalf("%s: restart interval %d, want %d", name, r, tt.ri)
			}
			sos := bytes.Index(enc, []byte{0xFF, 0xDA})
			dht := bytes.Index(enc, []byte{0xFF, 0xC4})
			if !bytes.Contains(got, enc[dht:sos]) {
				t.Fatalf("%s: the source's Huffman tables are gone", name)
			}
			// Standard tables (libjpeg's default) code every DC difference.
			if std := bytes.Count(got, stdDC) > bytes.Count(enc, stdDC); std != optimize {
				t.Fatalf("%s: standard DC table added %t", name, std)
			}
			pix := decodeT(t, d, enc, tt.w, tt.h)
			if !bytes.Equal(decodeT(t, d, got, tt.w, tt.h), pix) {
				t.Fatalf("%s: pixels differ from the source's", name)
			}
			if !d.regionCut() {
				t.Fatalf("%s: the whole-image decode did not use the intervals", name)
			}
			d.cutRegions(false) // libjpeg reads the spliced scan, markers and all
			libjpeg := decodeT(t, d, got, tt.w, tt.h)
			d.cutRegions(true)
			if !bytes.Equal(libjpeg, pix) {
				t.Fatalf("%s: libjpeg decodes the spliced scan differently", name)
			}
		}
	}

	// Damage is reported, as libjpeg reports it, and nothing is spliced.
	enc := encodeT(t, p.src, p.w, p.h, 90, encodeOptions{subsample: true, restart: -1})
	sos := bytes.Index(enc, []byte{0xFF, 0xDA})
	flipped := bytes.Clone(enc)
	for i := sos + 2000; i < sos+2600; i += 7 {
		if b := flipped[i] ^ 0x10; flipped[i] != 0xFF && b != 0xFF {
			flipped[i] = b
		}
	}
	for name, bad := range map[string][]byte{"bit errors": flipped, "truncated": enc[:len(enc)*2/3]} {
		if _, err := d.Transcode(bad, 90, false); err == nil || !strings.Contains(err.Error(), "JPEG") || d.transcodeSpliced() {
			t.Fatalf("%s: spliced %t, %v", name, d.transcodeSpliced(), err)
		}
	}
}

// libjpeg lets a stray byte before a restart marker pass when its bit
// buffer has already read up to the marker; the region decoder does not.
// So the writer never keeps such a scan (it re-encodes it), and Verify,
// which keep_source_jpeg relies on, refuses it.
func TestStrayByteBeforeMarker(t *testing.T) {
	p := loadPhoto(t)
	d := NewDecoder()
	defer d.Close()
	enc := encodeT(t, p.src, p.w, p.h, 90, encodeOptions{subsample: true, restart: 5})
	sos := bytes.Index(enc, []byte{0xFF, 0xDA})
	// Before the last marker: libjpeg counts the bytes it skips and reports
	// them at the next marker it looks for, which EOI (read ahead) is not.
	rst := sos
	for i := sos; i+1 < len(enc); i++ {
		if enc[i] == 0xFF && enc[i+1] >= 0xD0 && enc[i+1] <= 0xD7 {
			rst = i
		}
	}
	stray := append(append(bytes.Clone(enc[:rst]), 0x00), enc[rst:]...)
	d.cutRegions(false)
	_, _, libjpegErr := d.Decode(stray, make([]byte, p.w*p.h*3))
	d.cutRegions(true)
	if libjpegErr != nil {
		t.Skipf("this libjpeg reports the stray byte: %v", libjpegErr)
	}
	if _, _, err := d.Decode(stray, make([]byte, p.w*p.h*3)); err == nil || !strings.Contains(err.Error(), "extraneous bytes") {
		t.Fatalf("region decoder: %v, want extraneous bytes", err)
	}
	if err := d.Verify(stray); err == nil || !strings.Contains(err.Error(), "restart interval") {
		t.Fatalf("Verify: %v", err)
	}
	for _, keep := range []bool{false, true} {
		got, err := d.Transcode(stray, 90, keep)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(got, enc[sos:rst]) {
			t.Fatalf("keepScan %t: the scan was kept", keep)
		}
		if !bytes.Equal(decodeT(t, d, got, p.w, p.h), decodeT(t, d, enc, p.w, p.h)) {
			t.Fatalf("keepScan %t: pixels differ from the source's", keep)
		}
	}
}
