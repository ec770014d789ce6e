package jpeg

import (
	"errors"
	"image"
	"strings"
	"testing"
)

func TestDecodeShortBuffer(t *testing.T) {
	enc := encodeT(t, gradient(30, 20), 30, 20, 90, encodeOptions{subsample: true})
	d := NewDecoder()
	defer d.Close()
	w, h, err := d.Decode(enc, make([]byte, 30*20*3-1))
	if !errors.Is(err, ErrShortBuffer) || w != 30 || h != 20 {
		t.Fatalf("Decode into a short buffer = %d, %d, %v; want 30, 20, ErrShortBuffer", w, h, err)
	}
	// The decoder is still usable afterwards.
	if _, _, err := d.Decode(enc, make([]byte, 30*20*3)); err != nil {
		t.Fatal(err)
	}
}

func TestDecoderClose(t *testing.T) {
	enc := encodeT(t, gradient(8, 8), 8, 8, 90, encodeOptions{subsample: true})
	d := NewDecoder()
	d.Close()
	d.Close() // harmless
	if _, _, err := d.Decode(enc, make([]byte, 8*8*3)); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Decode after Close: %v", err)
	}
	if err := d.DecodeCropResize(enc, image.Rect(0, 0, 8, 8), 4, 4, make([]byte, 48)); err == nil {
		t.Error("DecodeCropResize after Close: no error")
	}
	if _, _, err := d.DecodeConfig(enc); err == nil {
		t.Error("DecodeConfig after Close: no error")
	}
}

// Grayscale files come out as RGB with R = G = B, from both decode paths.
func TestDecodeGrayscale(t *testing.T) {
	const w, h = 70, 50
	g := make([]byte, w*h)
	for i := range g {
		g[i] = byte(i*7 + i/w*13)
	}
	enc := encodeT(t, g, w, h, 90, encodeOptions{gray: true})
	d := NewDecoder()
	defer d.Close()
	full := make([]byte, w*h*3)
	if _, _, err := d.Decode(enc, full); err != nil {
		t.Fatal(err)
	}
	small := make([]byte, 20*15*3)
	if err := d.DecodeCropResize(enc, image.Rect(5, 5, 65, 45), 20, 15, small); err != nil {
		t.Fatal(err)
	}
	for name, pix := range map[string][]byte{"Decode": full, "DecodeCropResize": small} {
		for i := 0; i < len(pix); i += 3 {
			if pix[i] != pix[i+1] || pix[i] != pix[i+2] {
				t.Fatalf("%s: pixel %d = %v, want R = G = B", name, i/3, pix[i:i+3])
			}
		}
	}
}
