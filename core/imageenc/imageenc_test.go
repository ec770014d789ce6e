package imageenc

import (
	"bytes"
	"errors"
	"image"
	stdjpeg "image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/internal/testphoto"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
)

// photo is a real photo from a Debian wallpaper package, decoded at 1/4
// (640×400) and re-encoded at quality 90: a JPEG source of a useful size.
func photo(t *testing.T) (data, pix []byte, w, h int) {
	t.Helper()
	small, w, h := testphoto.Scaled(t, 4, testphoto.Garden, testphoto.YellowFlower)
	data, err := jpeg.Encode(small, w, h, 90)
	if err != nil {
		t.Fatal(err)
	}
	d := jpeg.NewDecoder()
	defer d.Close()
	pix = make([]byte, w*h*3)
	if _, _, err := d.Decode(data, pix); err != nil {
		t.Fatal(err)
	}
	return data, pix, w, h
}

func encodeOne(t *testing.T, o field.ImageOptions, v field.Value) (field.Encoded, error) {
	t.Helper()
	if o.JPEGQuality == 0 {
		o.JPEGQuality = 90
	}
	e, err := NewEncoder(field.Desc{Type: field.RGBImage, Name: "image"}, o)
	if err != nil {
		t.Fatal(err)
	}
	return e.Encode(v, 0)
}

func size(enc field.Encoded) (int, int) {
	c := enc.Column
	return int(c[field.RGBWidthOff]) | int(c[field.RGBWidthOff+1])<<8, int(c[field.RGBHeightOff]) | int(c[field.RGBHeightOff+1])<<8
}

// JPEG sources are resized like decode + cv2.INTER_AREA: exactly when the
// shrink is under 2×, through DCT scaling (close, not equal) beyond.
func TestJPEGSourceResize(t *testing.T) {
	data, pix, w, h := photo(t)
	for _, tt := range []struct {
		maxRes       int
		exact        bool
		mean         float64 // bound on the mean absolute difference
		wantW, wantH int
	}{
		{0, true, 0, w, h},
		{w, true, 0, w, h},
		{400, true, 0, 400, 250},
		{320, false, 1.5, 320, 200}, // 2x: decoded at 1/2, then 1:1
		{256, false, 1.5, 256, 160}, // 1/2 then area
		{100, false, 1.5, 100, 62},  // 1/4 then area
	} {
		enc, err := encodeOne(t, field.ImageOptions{WriteMode: "raw", MaxResolution: tt.maxRes}, field.Value{Data: data, Encoded: true})
		if err != nil {
			t.Fatal(err)
		}
		gw, gh := size(enc)
		if gw != tt.wantW || gh != tt.wantH || len(enc.Heap) != gw*gh*3 {
			t.Fatalf("max_resolution %d: stored %dx%d (%d bytes), want %dx%d", tt.maxRes, gw, gh, len(enc.Heap), tt.wantW, tt.wantH)
		}
		want := make([]byte, gw*gh*3)
		imgproc.ResizeArea(want, gw, gh, pix, w, h, w*3, 3)
		var sum, mx int
		for i := range want {
			d := int(enc.Heap[i]) - int(want[i])
			sum, mx = sum+max(d, -d), max(mx, max(d, -d))
		}
		mean := float64(sum) / float64(len(want))
		t.Logf("max_resolution %d: mean diff %.3f, max %d", tt.maxRes, mean, mx)
		if tt.exact && mx != 0 || !tt.exact && mean > tt.mean {
			t.Errorf("max_resolution %d: mean diff %.3f, max %d vs decode + INTER_AREA", tt.maxRes, mean, mx)
		}
	}
}

// keep_source_jpeg stores the file's bytes only when nothing else is
// needed: no resize, JPEG storage, a clean decode.
func TestKeepSourceJPEG(t *testing.T) {
	data, _, w, _ := photo(t)
	truncated := data[:len(data)*2/3]
	for _, tt := range []struct {
		name string
		o    field.ImageOptions
		data []byte
		kept bool
		err  bool
	}{
		{"kept", field.ImageOptions{WriteMode: "jpg", KeepSourceJPEG: true}, data, true, false},
		{"kept under max_resolution", field.ImageOptions{WriteMode: "jpg", MaxResolution: w, KeepSourceJPEG: true}, data, true, false},
		{"off by default", field.ImageOptions{WriteMode: "jpg", ReencodePixels: true}, data, false, false},
		{"resized", field.ImageOptions{WriteMode: "jpg", MaxResolution: w - 1, KeepSourceJPEG: true}, data, false, false},
		{"stored raw", field.ImageOptions{WriteMode: "raw", KeepSourceJPEG: true}, data, false, false},
		{"truncated", field.ImageOptions{WriteMode: "jpg", KeepSourceJPEG: true}, truncated, false, true},
	} {
		enc, err := encodeOne(t, tt.o, field.Value{Data: tt.data, Encoded: true})
		if tt.err {
			if !errors.Is(err, field.ErrData) {
				t.Errorf("%s: error %v, want ErrData", tt.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if kept := bytes.Equal(enc.Heap, tt.data); kept != tt.kept {
			t.Errorf("%s: source bytes kept = %v, want %v", tt.name, kept, tt.kept)
		}
	}
}

// With SpliceKept a kept source without restart markers gets them spliced
// in, its coefficients unchanged, so that crops decode less; without it
// the bytes are kept, and a source the splice cannot take (grayscale here)
// is kept byte for byte. Each decodes to the source's pixels.
func TestKeepSourceJPEGMarkers(t *testing.T) {
	_, pix, w, h := photo(t)
	rgba := image.NewRGBA(image.Rect(0, 0, w, h))
	gray := image.NewGray(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		copy(rgba.Pix[4*i:], pix[3*i:3*i+3])
		rgba.Pix[4*i+3] = 255
		gray.Pix[i] = pix[3*i+1]
	}
	var std, stdGray bytes.Buffer
	if err := stdjpeg.Encode(&std, rgba, &stdjpeg.Options{Quality: 93}); err != nil {
		t.Fatal(err)
	}
	if err := stdjpeg.Encode(&stdGray, gray, &stdjpeg.Options{Quality: 93}); err != nil {
		t.Fatal(err)
	}
	dri := []byte{0xFF, 0xDD}
	d := jpeg.NewDecoder()
	defer d.Close()
	decode := func(b []byte) []byte {
		out := make([]byte, w*h*3)
		if _, _, err := d.Decode(b, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		src     []byte
		splice  bool
		kept    bool // byte for byte
		markers bool
	}{
		{"spliced", std.Bytes(), true, false, true},
		{"bytes", std.Bytes(), false, true, false},
		{"grayscale", stdGray.Bytes(), true, true, false},
	} {
		enc, err := encodeOne(t, field.ImageOptions{WriteMode: "jpg", KeepSourceJPEG: true, SpliceKept: tt.splice},
			field.Value{Data: tt.src, Encoded: true})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if kept := bytes.Equal(enc.Heap, tt.src); kept != tt.kept {
			t.Errorf("%s: bytes kept = %v, want %v", tt.name, kept, tt.kept)
		}
		if m := bytes.Contains(enc.Heap, dri); m != tt.markers {
			t.Errorf("%s: restart markers = %v, want %v", tt.name, m, tt.markers)
		}
		if !bytes.Equal(decode(enc.Heap), decode(tt.src)) {
			t.Errorf("%s: the stored JPEG decodes to other pixels than the source", tt.name)
		}
	}
}

// Paths are read by the encoder; errors name the file.
func TestPathSource(t *testing.T) {
	data, pix, w, h := photo(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "a.jpg")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	enc, err := encodeOne(t, field.ImageOptions{WriteMode: "raw"}, field.Value{Path: p})
	if err != nil {
		t.Fatal(err)
	}
	if gw, gh := size(enc); gw != w || gh != h || !bytes.Equal(enc.Heap, pix) {
		t.Errorf("path source: %dx%d, pixels equal %v", gw, gh, bytes.Equal(enc.Heap, pix))
	}
	missing := filepath.Join(dir, "missing.jpg")
	if _, err := encodeOne(t, field.ImageOptions{WriteMode: "raw"}, field.Value{Path: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: error %v does not name it", err)
	}
	bad := filepath.Join(dir, "bad.jpg")
	if err := os.WriteFile(bad, data[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := encodeOne(t, field.ImageOptions{WriteMode: "raw"}, field.Value{Path: bad}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("corrupt file: error %v does not name it", err)
	}
}

// Concurrent Encode calls share pooled decoders and resizers and must give
// the bytes a lone call gives.
func TestConcurrentEncode(t *testing.T) {
	data, _, _, _ := photo(t)
	e, err := NewEncoder(field.Desc{Type: field.RGBImage}, field.ImageOptions{WriteMode: "jpg", JPEGQuality: 90, MaxResolution: 200})
	if err != nil {
		t.Fatal(err)
	}
	want, err := e.Encode(field.Value{Data: data, Encoded: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				got, err := e.Encode(field.Value{Data: data, Encoded: true}, uint64(i))
				if err == nil && (!bytes.Equal(got.Heap, want.Heap) || !bytes.Equal(got.Column, want.Column)) {
					err = errors.New("concurrent Encode differs from a lone call")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestNewEncoderArguments(t *testing.T) {
	for _, o := range []field.ImageOptions{
		{WriteMode: "png", JPEGQuality: 90},
		{WriteMode: "jpg", JPEGQuality: 0},
		{WriteMode: "jpg", JPEGQuality: 101},
		{WriteMode: "raw", JPEGQuality: 90, MaxResolution: -1},
	} {
		if _, err := NewEncoder(field.Desc{Type: field.RGBImage}, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if e, err := NewEncoder(field.Desc{Type: field.Int}, field.ImageOptions{}); err != nil || e == nil {
		t.Errorf("IntField: %v", err)
	}
}

// A JPEG source that needs no resize is transcoded by default: requantized
// to the quality's tables in the DCT domain. ReencodePixels, resizing and
// sources the transcoder does not take (here grayscale) decode and
// re-encode the pixels instead, exactly as jpeg.Encode does.
func TestJPEGTranscodeSource(t *testing.T) {
	data90, pix, w, h := photo(t)
	data95, err := jpeg.Encode(pix, w, h, 95)
	if err != nil {
		t.Fatal(err)
	}
	gray := image.NewGray(image.Rect(0, 0, w, h))
	for i := range gray.Pix {
		gray.Pix[i] = pix[3*i+1]
	}
	var gb bytes.Buffer
	if err := stdjpeg.Encode(&gb, gray, &stdjpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	d := jpeg.NewDecoder()
	defer d.Close()
	decode := func(b []byte) []byte {
		gw, gh, err := d.DecodeConfig(b)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, gw*gh*3)
		if _, _, err := d.Decode(b, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	reencoded := func(src []byte) []byte {
		b, err := jpeg.Encode(decode(src), w, h, 90)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	transcoded := func(src []byte, keepScan bool) []byte {
		b, err := d.Transcode(src, 90, keepScan)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// A q90 source without restart markers (Go's encoder writes none): kept
	// as it is with KeepScans, Huffman-coded again with markers otherwise.
	rgba := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < w*h; i++ {
		copy(rgba.Pix[4*i:], pix[3*i:3*i+3])
		rgba.Pix[4*i+3] = 255
	}
	var std bytes.Buffer
	if err := stdjpeg.Encode(&std, rgba, &stdjpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	std90 := std.Bytes()
	if kept, marked := transcoded(std90, true), transcoded(std90, false); bytes.Contains(kept, []byte{0xFF, 0xDD}) ||
		!bytes.Contains(marked, []byte{0xFF, 0xDD}) || !bytes.HasSuffix(std90, kept[bytes.Index(kept, []byte{0xFF, 0xDA}):]) {
		t.Fatal("Transcode: keepScan should keep the scan without markers, and markers come otherwise")
	}
	for _, tt := range []struct {
		name string
		o    field.ImageOptions
		src  []byte
		want []byte
	}{
		{"q95 transcoded", field.ImageOptions{WriteMode: "jpg"}, data95, transcoded(data95, false)},
		{"q90 transcoded", field.ImageOptions{WriteMode: "jpg"}, data90, transcoded(data90, false)},
		{"q90 without markers", field.ImageOptions{WriteMode: "jpg"}, std90, transcoded(std90, false)},
		{"q90 without markers, KeepScans", field.ImageOptions{WriteMode: "jpg", KeepScans: true}, std90, transcoded(std90, true)},
		{"q95 KeepScans", field.ImageOptions{WriteMode: "jpg", KeepScans: true}, data95, transcoded(data95, false)},
		{"ReencodePixels", field.ImageOptions{WriteMode: "jpg", ReencodePixels: true}, data95, reencoded(data95)},
		{"grayscale re-encoded", field.ImageOptions{WriteMode: "jpg"}, gb.Bytes(), reencoded(gb.Bytes())},
		{"smart over threshold", field.ImageOptions{WriteMode: "smart", SmartThreshold: 1}, data95, transcoded(data95, false)},
		{"stored raw", field.ImageOptions{WriteMode: "raw"}, data95, decode(data95)},
	} {
		enc, err := encodeOne(t, tt.o, field.Value{Data: tt.src, Encoded: true})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if gw, gh := size(enc); gw != w || gh != h || !bytes.Equal(enc.Heap, tt.want) {
			t.Errorf("%s: %dx%d, %d bytes, not the expected %d", tt.name, gw, gh, len(enc.Heap), len(tt.want))
		}
	}
	// Transcoding a source already at the quality changes no pixel.
	enc, err := encodeOne(t, field.ImageOptions{WriteMode: "jpg"}, field.Value{Data: data90, Encoded: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(decode(enc.Heap), pix) {
		t.Error("q90 source transcoded at q90: pixels changed")
	}
}
