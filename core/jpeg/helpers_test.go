package jpeg

import (
	"image"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// Real photos from Debian's desktop-background packages; tests that need
// one skip when none is installed.
var photoPaths = []string{
	"/usr/share/backgrounds/mate/nature/Garden.jpg",
	"/usr/share/backgrounds/mate/nature/YellowFlower.jpg",
	"/usr/share/backgrounds/Fossa_by_Jasper_Roks.jpg",
	"/usr/share/backgrounds/gnome/adwaita-day.jpg",
}

// gradient returns a smooth w×h RGB test image with a few soft features,
// the kind of content JPEG reproduces well.
func gradient(w, h int) []byte {
	p := make([]byte, w*h*3)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			i := (y*w + x) * 3
			p[i] = uint8(255 * fx)
			p[i+1] = uint8(255 * fy)
			p[i+2] = uint8(127.5 + 127*math.Sin(6*fx+4*fy))
		}
	}
	return p
}

type testPhoto struct {
	src  []byte // downscaled photo, before JPEG compression
	jpeg []byte // src at quality 90, baseline 4:2:0
	pix  []byte // RGB decode of jpeg
	w, h int
}

var (
	photoOnce sync.Once
	photo     testPhoto
	photoErr  string
)

// loadPhoto returns the test photo or skips the test.
func loadPhoto(t testing.TB) testPhoto {
	t.Helper()
	p, ok := tryPhoto()
	if !ok {
		t.Skip(photoErr)
	}
	return p
}

// tryPhoto decodes the first installed photo, scales it to 400×300
// (cropping the middle to 4:3) and re-encodes it at quality 90.
func tryPhoto() (testPhoto, bool) {
	photoOnce.Do(func() {
		var data []byte
		for _, p := range photoPaths {
			if b, err := os.ReadFile(p); err == nil {
				data = b
				break
			}
		}
		if data == nil {
			photoErr = "no test photo installed (mate-backgrounds or similar)"
			return
		}
		d := NewDecoder()
		defer d.Close()
		w, h, err := d.DecodeConfig(data)
		if err != nil {
			photoErr = err.Error()
			return
		}
		full := make([]byte, w*h*3)
		if _, _, err := d.Decode(data, full); err != nil {
			photoErr = err.Error()
			return
		}
		cw, ch := w, w*3/4
		if ch > h {
			cw, ch = h*4/3, h
		}
		r := image.Rect((w-cw)/2, (h-ch)/2, (w-cw)/2+cw, (h-ch)/2+ch)
		const pw, ph = 400, 300
		small := make([]byte, pw*ph*3)
		imgproc.ResizeArea(small, pw, ph, imgproc.SubRect(full, w*3, 3, r), cw, ch, w*3, 3)
		enc, err := Encode(small, pw, ph, 90)
		if err != nil {
			photoErr = err.Error()
			return
		}
		pix := make([]byte, pw*ph*3)
		if _, _, err := d.Decode(enc, pix); err != nil {
			photoErr = err.Error()
			return
		}
		photo = testPhoto{src: small, jpeg: enc, pix: pix, w: pw, h: ph}
	})
	return photo, photoErr == ""
}

// encodeT encodes or fails the test.
func encodeT(t testing.TB, pix []byte, w, h, q int, o encodeOptions) []byte {
	t.Helper()
	b, err := encode(pix, w, h, q, o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stats returns the mean and max absolute difference of a and b.
func stats(a, b []byte) (mean float64, maxDiff int) {
	var sum int
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		sum += d
		maxDiff = max(maxDiff, d)
	}
	return float64(sum) / float64(len(a)), maxDiff
}

func psnr(a, b []byte) float64 {
	var se float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		se += d * d
	}
	if se == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(se/float64(len(a))))
}
