package jpeg

import (
	"bytes"
	"image"
	"testing"
)

// FuzzDecode checks that no input crashes the decoder or makes it write
// outside its buffers: every call either fails or returns a full image; and
// what Transcode makes of a decodable input decodes at the same size (to the
// same pixels where it spliced restart markers in); and a
// crop cut out at restart markers decodes as from the whole scan; and
// DecodeViews fails and decodes each view as its own decode does.
// go test runs the seeds; use -fuzz=FuzzDecode for a real search.
func FuzzDecode(f *testing.F) {
	pix := gradient(40, 24)
	gray := make([]byte, 40*24)
	for _, o := range []encodeOptions{
		{subsample: true}, {progressive: true}, {gray: true}, {cmyk: true, ycck: true},
		{subsample: true, restart: 1}, {hs: 2, vs: 1, restart: 3},
	} {
		src := pix
		switch {
		case o.gray:
			src = gray
		case o.cmyk:
			src = rgbToCMYK(pix)
		}
		b, err := encode(src, 40, 24, 75, o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	// At the quality Transcode is asked for and without markers: spliced,
	// with the source's DC tables or (made for the image) the standard one.
	for _, optimize := range []bool{false, true} {
		b, err := encode(pix, 40, 24, 90, encodeOptions{subsample: true, optimize: optimize, restart: -1})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder()
		defer d.Close()
		w, h, err := d.DecodeConfig(data)
		if err != nil || w*h > 1<<20 {
			return // keep each run small
		}
		src := make([]byte, w*h*3)
		if _, _, err := d.Decode(data, src); err != nil {
			return
		}
		if tb, err := d.Transcode(data, 90, false); err == nil {
			spliced := d.transcodeSpliced()
			got := make([]byte, w*h*3)
			if tw, th, err := d.Decode(tb, got); err != nil || tw != w || th != h {
				t.Fatalf("transcoded %dx%d input decodes as %dx%d: %v", w, h, tw, th, err)
			}
			// Splicing markers in leaves the coefficients as they were.
			if spliced && !bytes.Equal(got, src) {
				t.Fatal("markers spliced in changed the pixels")
			}
		}
		crops := []image.Rectangle{
			image.Rect(0, 0, w, h),
			image.Rect(w/3, h/3, w/3+max(w/2, 1), h/3+max(h/2, 1)),
		}
		var views []View
		for _, c := range crops {
			for _, out := range [][2]int{{7, 5}, {max(w/8, 1), max(h/8, 1)}, {2 * w, h}} {
				views = append(views, View{c, out[0], out[1], make([]byte, out[0]*out[1]*3), len(views)%2 == 1})
				dst := make([]byte, out[0]*out[1]*3)
				err := d.DecodeCropResize(data, c, out[0], out[1], dst)
				// Where a region stream was cut, the whole scan must give
				// the same pixels whenever both decode.
				if err != nil || !d.regionCut() {
					continue
				}
				d.cutRegions(false)
				whole := make([]byte, len(dst))
				if d.DecodeCropResize(data, c, out[0], out[1], whole) == nil && !bytes.Equal(whole, dst) {
					t.Fatalf("crop %v to %v: the region stream's pixels differ from the whole scan's", c, out)
				}
				d.cutRegions(true)
			}
		}
		want, werrs := separate(d, data, views)
		gerrs := viewErrors(t, d.DecodeViews(data, views), len(views))
		for i, v := range views {
			if (gerrs[i] == nil) != (werrs[i] == nil) || gerrs[i] == nil && !bytes.Equal(v.Dst, want[i]) {
				t.Fatalf("view %d (%v to %dx%d): DecodeViews error %v, on its own %v, pixels equal %t",
					i, v.Crop, v.W, v.H, gerrs[i], werrs[i], gerrs[i] == nil && bytes.Equal(v.Dst, want[i]))
			}
		}
	})
}
