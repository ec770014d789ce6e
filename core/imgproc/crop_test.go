package imgproc

import (
	"bytes"
	"image"
	"slices"
	"testing"
)

func TestCropAndSubRect(t *testing.T) {
	const w, h, c = 5, 4, 3
	src := make([]byte, w*h*c)
	for i := range src {
		src[i] = byte(i)
	}
	r := image.Rect(1, 2, 4, 4)
	got := Crop(nil, src, w*c, c, r)
	var want []byte
	for y := r.Min.Y; y < r.Max.Y; y++ {
		want = append(want, src[(y*w+r.Min.X)*c:(y*w+r.Max.X)*c]...)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Crop = %v, want %v", got, want)
	}
	// Reuses a big enough dst.
	buf := make([]byte, 100)
	if got2 := Crop(buf, src, w*c, c, r); &got2[0] != &buf[0] || !bytes.Equal(got2, want) {
		t.Error("Crop did not reuse dst")
	}
	sub := SubRect(src, w*c, c, r)
	if sub[0] != src[(2*w+1)*c] || len(sub) != (r.Dy()-1)*w*c+r.Dx()*c {
		t.Errorf("SubRect: first byte %d, len %d", sub[0], len(sub))
	}
}

func TestFlipHorizontal(t *testing.T) {
	for _, c := range []int{1, 2, 3, 4} {
		for _, w := range []int{1, 2, 5, 8} {
			const h = 3
			img := make([]byte, w*h*c)
			for i := range img {
				img[i] = byte(i * 7)
			}
			orig := append([]byte(nil), img...)
			FlipHorizontal(img, w, h, c)
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					g := img[(y*w+x)*c : (y*w+x+1)*c]
					o := orig[(y*w+w-1-x)*c : (y*w+w-x)*c]
					if !bytes.Equal(g, o) {
						t.Fatalf("c=%d w=%d (%d,%d): %v, want %v", c, w, x, y, g, o)
					}
				}
			}
			FlipHorizontal(img, w, h, c)
			if !bytes.Equal(img, orig) {
				t.Fatalf("c=%d w=%d: double flip is not the identity", c, w)
			}
		}
	}
}

// TestFlipRGBRows: the word-wise row flip against a pixel-by-pixel mirror,
// for every width from 0 to 40 (the word loop takes over at 4 pixels),
// and only within the row: the bytes around it stay.
func TestFlipRGBRows(t *testing.T) {
	for w := 0; w <= 40; w++ {
		buf := make([]byte, 3*w+16)
		for i := range buf {
			buf[i] = byte(i*7 + 3)
		}
		orig := slices.Clone(buf)
		row := buf[8 : 8+3*w]
		flipRGB(row, w)
		for i := 0; i < w; i++ {
			got, want := row[3*i:3*i+3], orig[8+3*(w-1-i):8+3*(w-i)]
			if !slices.Equal(got, want) {
				t.Fatalf("width %d: pixel %d is %v, want %v", w, i, got, want)
			}
		}
		if !slices.Equal(buf[:8], orig[:8]) || !slices.Equal(buf[8+3*w:], orig[8+3*w:]) {
			t.Fatalf("width %d: bytes outside the row changed", w)
		}
	}
}
