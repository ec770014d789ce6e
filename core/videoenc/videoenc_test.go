package videoenc

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/internal/testphoto"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
)

// pan returns n frames of w×h pixels: a window moving right across a real
// photo (Debian's mate-backgrounds) decoded at 1/8.
func pan(t *testing.T, n, w, h int) []byte {
	t.Helper()
	pix, pw, _ := testphoto.Scaled(t, 8, testphoto.Garden)
	var out []byte
	for k := 0; k < n; k++ {
		for y := 0; y < h; y++ {
			row := (y*pw + 4*k) * 3
			out = append(out, pix[row:row+w*3]...)
		}
	}
	return out
}

func newEnc(t *testing.T, o Options) field.Encoder {
	t.Helper()
	e, err := NewEncoder(field.Desc{Type: field.Video, Name: "video"}, o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Each frame is stored exactly as an RGBImageField stores that image:
// the same resize, the same JPEG bytes.
func TestFramesAreImages(t *testing.T) {
	const n, w, h = 5, 160, 96
	pix := pan(t, n, w, h)
	for _, tc := range []struct {
		name   string
		maxRes int
		sw, sh int
	}{
		{"stored as given", 0, w, h},
		{"max_resolution", 80, 80, 48},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{MaxResolution: tc.maxRes, JPEGQuality: 85}
			enc, err := newEnc(t, o).Encode(field.Value{Data: pix, Width: w, Height: h, Channels: 3, Float: 25}, 0)
			if err != nil {
				t.Fatal(err)
			}
			m := field.ParseVideoMeta(enc.Column)
			if m.Frames != n || m.Width != tc.sw || m.Height != tc.sh || m.FPS != 25 || m.Size != uint64(len(enc.Heap)) {
				t.Fatalf("meta %+v", m)
			}
			img, err := imageenc.NewEncoder(field.Desc{Type: field.RGBImage, Name: "image"},
				field.ImageOptions{WriteMode: "jpg", MaxResolution: o.MaxResolution, JPEGQuality: o.JPEGQuality})
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < n; k++ {
				got, err := field.VideoFrame(enc.Heap, m.Frames, k)
				if err != nil {
					t.Fatal(err)
				}
				want, err := img.Encode(field.Value{Data: pix[k*w*h*3 : (k+1)*w*h*3], Width: w, Height: h, Channels: 3}, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want.Heap) {
					t.Fatalf("frame %d differs from the image encoder's JPEG", k)
				}
			}
		})
	}
}

// Frame folders: each file read, decoded and encoded by the image encoder;
// bad frames are errors naming the file.
func TestFrameFiles(t *testing.T) {
	const w, h = 64, 48
	pix := pan(t, 4, w, h)
	dir := t.TempDir()
	var paths []string
	for k := 0; k < 3; k++ {
		b, err := jpeg.Encode(pix[k*w*h*3:(k+1)*w*h*3], w, h, 95)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "frame"+string(rune('0'+k))+".jpg")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	big, _ := jpeg.Encode(pan(t, 1, 2*w, h), 2*w, h, 95)
	os.WriteFile(filepath.Join(dir, "big.jpg"), big, 0o644)
	os.WriteFile(filepath.Join(dir, "cut.jpg"), big[:len(big)/3], 0o644)
	enc := newEnc(t, Options{JPEGQuality: 90})
	e, err := enc.Encode(field.Value{Path: strings.Join(paths, "\x00")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m := field.ParseVideoMeta(e.Column); m.Frames != 3 || m.Width != w || m.Height != h || m.FPS != 0 {
		t.Fatalf("meta %+v", m)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"another size", paths[0] + "\x00" + filepath.Join(dir, "big.jpg"), "big.jpg) is stored 128x48"},
		{"missing", paths[0] + "\x00" + filepath.Join(dir, "none.jpg"), "none.jpg"},
		{"truncated", filepath.Join(dir, "cut.jpg"), "cut.jpg"},
		{"empty path", paths[0] + "\x00", "empty frame path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := enc.Encode(field.Value{Path: tc.path}, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestBadClips(t *testing.T) {
	enc := newEnc(t, Options{JPEGQuality: 90})
	for _, tc := range []struct {
		name string
		v    field.Value
		want string
	}{
		{"no frames", field.Value{Width: 4, Height: 4, Channels: 3}, "no frames"},
		{"part of a frame", field.Value{Data: make([]byte, 4*4*3+5), Width: 4, Height: 4, Channels: 3}, "whole number"},
		{"no size", field.Value{Data: make([]byte, 12)}, "frames of 0x0x0"},
		{"NaN fps", field.Value{Data: make([]byte, 48), Width: 4, Height: 4, Channels: 3, Float: math.NaN()}, "frame rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := enc.Encode(tc.v, 0)
			if !errors.Is(err, field.ErrData) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrData about %q", err, tc.want)
			}
		})
	}
	if _, err := NewEncoder(field.Desc{Type: field.Video, Name: "v"}, Options{JPEGQuality: 0}); err == nil {
		t.Fatal("quality 0 accepted")
	}
}
