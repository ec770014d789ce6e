// Package imageenc is the writer's side of RGBImageField: it turns source
// images (pixels, image files, paths) into the stored form, raw pixels or
// JPEG, limited to max_resolution. It lives apart from package field, which
// only describes the format, so that readers do not link the codecs.
package imageenc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // decoders for DatasetWriter.from_image_folder inputs
	_ "image/png"
	"math/rand/v2"
	"os"
	"sync"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
)

// NewEncoder returns the writer's encoder for a field: the image encoder
// for RGBImage, field.NewEncoder's for every other type.
func NewEncoder(d field.Desc, o field.ImageOptions) (field.Encoder, error) {
	if d.Type != field.RGBImage {
		return field.NewEncoder(d)
	}
	switch o.WriteMode {
	case "raw", "jpg", "smart", "proportion":
	default:
		return nil, fmt.Errorf("RGBImageField: write_mode %q must be 'raw', 'jpg', 'smart' or 'proportion'", o.WriteMode)
	}
	if o.JPEGQuality < 1 || o.JPEGQuality > 100 {
		return nil, fmt.Errorf("RGBImageField: jpeg_quality %d must be in [1, 100]", o.JPEGQuality)
	}
	if o.MaxResolution < 0 {
		return nil, fmt.Errorf("RGBImageField: max_resolution %d must be positive", o.MaxResolution)
	}
	return &encoder{opts: o}, nil
}

type encoder struct {
	opts field.ImageOptions
	// workers holds per-goroutine codec state (a libjpeg decoder, resize
	// tables), so the writer's parallel Encode calls reuse it.
	workers sync.Pool
}

type worker struct {
	dec *jpeg.Decoder
	rs  imgproc.Resizer
}

func (e *encoder) worker() *worker {
	if w, ok := e.workers.Get().(*worker); ok {
		return w
	}
	return &worker{dec: jpeg.NewDecoder()}
}

func (e *encoder) Encode(v field.Value, sample uint64) (field.Encoded, error) {
	wk := e.worker()
	defer e.workers.Put(wk)
	src, err := e.source(wk, v, sample)
	if err != nil {
		return field.Encoded{}, fmt.Errorf("%w: %v", field.ErrData, err)
	}
	if src.w > 0xffff || src.h > 0xffff {
		return field.Encoded{}, fmt.Errorf("%w: image %dx%d does not fit the format's 16-bit sizes (set max_resolution)", field.ErrData, src.w, src.h)
	}
	col := make([]byte, 13)
	binary.LittleEndian.PutUint16(col[field.RGBWidthOff:], uint16(src.w))
	binary.LittleEndian.PutUint16(col[field.RGBHeightOff:], uint16(src.h))
	col[field.RGBModeOff] = field.ModeRaw
	heap := src.pix
	if e.asJPEG(src.w, src.h, sample) {
		col[field.RGBModeOff] = field.ModeJPEG
		if src.jpeg != nil {
			heap = src.jpeg
		} else if heap, err = jpeg.Encode(src.pix, src.w, src.h, e.opts.JPEGQuality); err != nil {
			return field.Encoded{}, err
		}
	}
	img := field.ImageGeometry{SrcW: src.srcW, SrcH: src.srcH, W: src.w, H: src.h}
	return field.Encoded{Column: col, Heap: heap, HasHeap: true, PtrOffset: field.RGBPtrOff, Image: img}, nil
}

// asJPEG applies the write mode to a w×h image.
func (e *encoder) asJPEG(w, h int, sample uint64) bool {
	switch e.opts.WriteMode {
	case "jpg":
		return true
	case "smart":
		return e.opts.SmartThreshold > 0 && w*h*3 > e.opts.SmartThreshold
	case "proportion":
		rng := rand.New(rand.NewPCG(e.opts.Seed, sample))
		return rng.Float64() < e.opts.CompressProbability
	}
	return false
}

// rgbImage is a source image at its stored size: RGB pixels, and the source
// JPEG's bytes when they may be stored unchanged (then pix may be nil).
type rgbImage struct {
	pix        []byte
	w, h       int
	jpeg       []byte
	srcW, srcH int // the size before max_resolution, for the fields that follow the image
}

// source returns v's pixels at the stored size: decoded from a file (JPEG
// files with DCT scaling when that still covers the stored size) and
// limited to max_resolution.
func (e *encoder) source(wk *worker, v field.Value, sample uint64) (rgbImage, error) {
	data := v.Data
	if v.Path != "" {
		b, err := os.ReadFile(v.Path)
		if err != nil {
			return rgbImage{}, err
		}
		data = b
	} else if !v.Encoded {
		pix, w, h, err := pixels(v)
		if err != nil {
			return rgbImage{}, err
		}
		return e.limit(wk, pix, w, h), nil
	}
	im, err := e.decodeFile(wk, data, sample)
	if err != nil && v.Path != "" {
		err = fmt.Errorf("%s: %w", v.Path, err)
	}
	return im, err
}

// decodeFile decodes an image file to the stored size. A JPEG that needs
// no resize and is to be stored as JPEG is kept (KeepSourceJPEG: its bytes,
// or with SpliceKept its coefficients with restart markers where it can be)
// or transcoded instead when it can be; then pix is nil.
func (e *encoder) decodeFile(wk *worker, data []byte, sample uint64) (rgbImage, error) {
	if len(data) < 2 || data[0] != 0xff || data[1] != 0xd8 {
		pix, w, h, err := decodeOther(data)
		if err != nil {
			return rgbImage{}, err
		}
		return e.limit(wk, pix, w, h), nil
	}
	w, h, err := wk.dec.DecodeConfig(data)
	if err != nil {
		return rgbImage{}, err
	}
	nw, nh := storedSize(w, h, e.opts.MaxResolution)
	if nw == w && nh == h && e.asJPEG(w, h, sample) {
		switch {
		case e.opts.KeepSourceJPEG:
			if err := wk.dec.Verify(data); err != nil {
				return rgbImage{}, err
			}
			if e.opts.SpliceKept {
				// Quality 100 changes no quantization step: the source's own
				// coefficients and tables in one scan with restart markers. The
				// same pixels; a crop then entropy-decodes only the intervals
				// under it.
				b, err := wk.dec.Transcode(data, 100, false)
				if err == nil {
					return rgbImage{w: w, h: h, jpeg: b, srcW: w, srcH: h}, nil
				}
				if !errors.Is(err, jpeg.ErrNotTranscodable) {
					return rgbImage{}, err
				}
			}
			return rgbImage{w: w, h: h, jpeg: data, srcW: w, srcH: h}, nil
		case !e.opts.ReencodePixels:
			b, err := wk.dec.Transcode(data, e.opts.JPEGQuality, e.opts.KeepScans)
			if err == nil {
				return rgbImage{w: w, h: h, jpeg: b, srcW: w, srcH: h}, nil
			}
			if !errors.Is(err, jpeg.ErrNotTranscodable) {
				return rgbImage{}, err
			}
		}
	}
	pix := make([]byte, nw*nh*3)
	if nw == w && nh == h {
		if _, _, err := wk.dec.Decode(data, pix); err != nil {
			return rgbImage{}, err
		}
		return rgbImage{pix: pix, w: w, h: h, srcW: w, srcH: h}, nil
	}
	// A whole-image crop: libjpeg scales by 1/2, 3/8, 1/4 or 1/8 during the
	// IDCT when the result still covers nw×nh (FFCV decodes fully), then
	// the area filter finishes; otherwise the same as decode + ResizeArea.
	if err := wk.dec.DecodeCropResize(data, image.Rect(0, 0, w, h), nw, nh, pix); err != nil {
		return rgbImage{}, err
	}
	return rgbImage{pix: pix, w: nw, h: nh, srcW: w, srcH: h}, nil
}

// storedSize is FFCV's max_resolution sizing: int(ratio * size) per axis.
func storedSize(w, h, maxRes int) (int, int) {
	if maxRes <= 0 || max(w, h) <= maxRes {
		return w, h
	}
	ratio := float64(maxRes) / float64(max(w, h))
	return max(int(ratio*float64(w)), 1), max(int(ratio*float64(h)), 1)
}

// limit downscales pixels (area) to the stored size.
func (e *encoder) limit(wk *worker, pix []byte, w, h int) rgbImage {
	nw, nh := storedSize(w, h, e.opts.MaxResolution)
	if nw == w && nh == h {
		return rgbImage{pix: pix, w: w, h: h, srcW: w, srcH: h}
	}
	out := make([]byte, nw*nh*3)
	wk.rs.ResizeArea(out, nw, nh, pix, w, h, w*3, 3)
	return rgbImage{pix: out, w: nw, h: nh, srcW: w, srcH: h}
}

// pixels returns the HWC RGB pixels of a raw value, expanding grayscale
// and dropping alpha as needed.
func pixels(v field.Value) ([]byte, int, int, error) {
	w, h, c := v.Width, v.Height, v.Channels
	if w <= 0 || h <= 0 {
		return nil, 0, 0, fmt.Errorf("image of size %dx%d is empty", w, h)
	}
	if len(v.Data) != w*h*c {
		return nil, 0, 0, fmt.Errorf("image of %dx%dx%d needs %d bytes, got %d", h, w, c, w*h*c, len(v.Data))
	}
	switch c {
	case 3:
		return v.Data, w, h, nil
	case 1, 2, 4:
		out := make([]byte, w*h*3)
		for i := 0; i < w*h; i++ {
			p := v.Data[i*c:]
			if c < 3 {
				out[3*i], out[3*i+1], out[3*i+2] = p[0], p[0], p[0]
			} else {
				copy(out[3*i:3*i+3], p[:3])
			}
		}
		return out, w, h, nil
	}
	return nil, 0, 0, fmt.Errorf("image has %d channels; want 1, 3 or 4", c)
}

// decodeOther decodes a non-JPEG image file with Go's decoders.
func decodeOther(data []byte) ([]byte, int, int, error) {
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("decode image: %w", err)
	}
	b := img.Bounds()
	rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Bounds(), img, b.Min, draw.Src)
	pix := make([]byte, b.Dx()*b.Dy()*3)
	for i := 0; i < b.Dx()*b.Dy(); i++ {
		copy(pix[3*i:3*i+3], rgba.Pix[4*i:4*i+3])
	}
	return pix, b.Dx(), b.Dy(), nil
}
