package imgproc

import (
	"bytes"
	"testing"
)

func TestPadTopLeft(t *testing.T) {
	// A 2x2 region (stride 3 pixels) of a 1-channel source into 4x3.
	src := []byte{1, 2, 9, 3, 4, 9}
	for _, c := range []struct {
		name         string
		w, h, dw, dh int
		want         []byte
	}{
		{"bigger", 2, 2, 4, 3, []byte{1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0}},
		{"same size", 2, 2, 2, 2, []byte{1, 2, 3, 4}},
		{"wider only", 2, 1, 3, 1, []byte{1, 2, 0}},
		{"empty source", 0, 0, 2, 1, []byte{0, 0}},
	} {
		dst := bytes.Repeat([]byte{7}, c.dw*c.dh)
		PadTopLeft(dst, c.dw, c.dh, src, 3, c.w, c.h, 1)
		if !bytes.Equal(dst, c.want) {
			t.Errorf("%s: %v, want %v", c.name, dst, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a source larger than the destination was accepted")
		}
	}()
	PadTopLeft(make([]byte, 4), 2, 2, src, 3, 3, 2, 1)
}

func TestFillRGB(t *testing.T) {
	for _, n := range []int{0, 1, 3, 6, 9, 30, 3 * 1000} {
		img := make([]byte, n)
		FillRGB(img, [3]byte{114, 1, 255})
		for i, v := range img[:n/3*3] {
			if want := [3]byte{114, 1, 255}[i%3]; v != want {
				t.Fatalf("%d bytes: byte %d = %d, want %d", n, i, v, want)
			}
		}
	}
}
