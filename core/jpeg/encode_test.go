package jpeg

import (
	"strings"
	"testing"
)

// TestEncodeDecodeRoundTrip checks Encode against Decode. The bounds are
// what libjpeg-turbo achieves at these qualities with 4:2:0 chroma
// subsampling, with some slack: smooth content reconstructs at 40+ dB,
// a detailed photo at 30+ dB (quality 90).
func TestEncodeDecodeRoundTrip(t *testing.T) {
	type tc struct {
		name    string
		pix     []byte
		w, h, q int
		minPSNR float64
	}
	tests := []tc{
		{"gradient 64x48 q95", gradient(64, 48), 64, 48, 95, 40},
		{"gradient 37x23 q90", gradient(37, 23), 37, 23, 90, 35}, // partial MCUs
		{"gradient 1x1 q90", gradient(1, 1), 1, 1, 90, 35},
		{"gradient 400x300 q75", gradient(400, 300), 400, 300, 75, 38},
	}
	if p, ok := tryPhoto(); ok {
		tests = append(tests, tc{"photo 400x300 q90", p.src, p.w, p.h, 90, 34})
	}
	d := NewDecoder()
	defer d.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc, err := Encode(tt.pix, tt.w, tt.h, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if enc[0] != 0xFF || enc[1] != 0xD8 || string(enc[6:11]) != "JFIF\x00" {
				t.Errorf("not a JFIF file: % x", enc[:12])
			}
			w, h, err := DecodeConfig(enc)
			if err != nil || w != tt.w || h != tt.h {
				t.Fatalf("DecodeConfig = %d, %d, %v; want %d, %d", w, h, err, tt.w, tt.h)
			}
			got := make([]byte, tt.w*tt.h*3)
			w, h, err = d.Decode(enc, got)
			if err != nil || w != tt.w || h != tt.h {
				t.Fatalf("Decode = %d, %d, %v", w, h, err)
			}
			mean, mx := stats(got, tt.pix)
			p := psnr(got, tt.pix)
			t.Logf("%d bytes, PSNR %.1f dB, mean abs diff %.2f, max %d", len(enc), p, mean, mx)
			if p < tt.minPSNR {
				t.Errorf("PSNR %.1f dB < %.0f", p, tt.minPSNR)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	pix := make([]byte, 16*16*3)
	for _, tt := range []struct {
		name    string
		pix     []byte
		w, h, q int
		want    string
	}{
		{"quality 0", pix, 16, 16, 0, "quality"},
		{"quality 101", pix, 16, 16, 101, "quality"},
		{"zero width", pix, 0, 16, 90, "bad size"},
		{"huge", pix, 70000, 1, 90, "bad size"},
		{"short pixels", pix[:100], 16, 16, 90, "need 768"},
	} {
		_, err := Encode(tt.pix, tt.w, tt.h, tt.q)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

// TestEncodeVariants decodes the other kinds of JPEG the decoder must
// handle: grayscale, 4:4:4, progressive, CMYK and YCCK.
func TestEncodeVariants(t *testing.T) {
	const w, h = 48, 40
	rgb := gradient(w, h)
	gray := make([]byte, w*h)
	for i := range gray {
		gray[i] = uint8((int(rgb[3*i]) + int(rgb[3*i+1])) / 2)
	}
	cmyk := rgbToCMYK(rgb)
	d := NewDecoder()
	defer d.Close()
	for _, tt := range []struct {
		name    string
		pix     []byte
		o       encodeOptions
		want    []byte // expected RGB
		minPSNR float64
	}{
		{"gray", gray, encodeOptions{gray: true}, grayToRGB(gray), 40},
		{"444", rgb, encodeOptions{}, rgb, 40},
		{"progressive 420", rgb, encodeOptions{subsample: true, progressive: true}, rgb, 38},
		{"cmyk", cmyk, encodeOptions{cmyk: true}, rgb, 35},
		{"ycck 420", cmyk, encodeOptions{cmyk: true, ycck: true, subsample: true}, rgb, 33},
	} {
		t.Run(tt.name, func(t *testing.T) {
			enc := encodeT(t, tt.pix, w, h, 95, tt.o)
			got := make([]byte, w*h*3)
			if _, _, err := d.Decode(enc, got); err != nil {
				t.Fatal(err)
			}
			p := psnr(got, tt.want)
			t.Logf("PSNR %.1f dB", p)
			if p < tt.minPSNR {
				t.Errorf("PSNR %.1f dB < %.0f", p, tt.minPSNR)
			}
		})
	}
}

func grayToRGB(g []byte) []byte {
	out := make([]byte, 0, len(g)*3)
	for _, v := range g {
		out = append(out, v, v, v)
	}
	return out
}

// rgbToCMYK converts to Adobe-inverted CMYK (libjpeg-turbo's rgb_to_cmyk):
// the stored values are 255 minus the ink amounts.
func rgbToCMYK(rgb []byte) []byte {
	out := make([]byte, 0, len(rgb)/3*4)
	for i := 0; i < len(rgb); i += 3 {
		c, m, y := 1-float64(rgb[i])/255, 1-float64(rgb[i+1])/255, 1-float64(rgb[i+2])/255
		k := min(c, m, y)
		if k == 1 {
			out = append(out, 255, 255, 255, 0)
			continue
		}
		inv := func(v float64) byte { return byte(255 - (v-k)/(1-k)*255 + 0.5) }
		out = append(out, inv(c), inv(m), inv(y), byte(255-k*255+0.5))
	}
	return out
}
