// Package testphoto decodes the real photos tests run on: wallpapers of
// Debian's mate-backgrounds package. A test skips when none is installed.
package testphoto

import (
	"image"
	"os"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/jpeg"
)

// Photos of mate-backgrounds.
const (
	Garden       = "/usr/share/backgrounds/mate/nature/Garden.jpg"
	YellowFlower = "/usr/share/backgrounds/mate/nature/YellowFlower.jpg"
)

// Scaled is the first of paths that is installed, decoded at 1/n of its
// size: its RGB pixels, width and height. t skips when none is installed.
func Scaled(t testing.TB, n int, paths ...string) (pix []byte, w, h int) {
	t.Helper()
	var src []byte
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			src = b
			break
		}
	}
	if src == nil {
		t.Skip("no photo installed (Debian package mate-backgrounds)")
	}
	d := jpeg.NewDecoder()
	defer d.Close()
	sw, sh, err := d.DecodeConfig(src)
	if err != nil {
		t.Fatal(err)
	}
	w, h = sw/n, sh/n
	pix = make([]byte, w*h*3)
	if err := d.DecodeCropResize(src, image.Rect(0, 0, sw, sh), w, h, pix); err != nil {
		t.Fatal(err)
	}
	return pix, w, h
}
