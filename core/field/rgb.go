package field

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/draw"
	_ "image/gif" // decoders for DatasetWriter.from_image_folder inputs
	_ "image/png"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"
	"math/rand/v2"
	"os"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
)

// Image storage modes in the RGBImage column.
const (
	ModeJPEG = 0
	ModeRaw  = 1
)

// ImageOptions are RGBImageField's write options, with FFCV 1.0's meaning.
type ImageOptions struct {
	WriteMode           string // "raw", "jpg", "smart" or "proportion"
	MaxResolution       int    // 0: keep the size
	SmartThreshold      int    // 0: none ("smart" then stores raw)
	JPEGQuality         int
	CompressProbability float64
	Seed                uint64 // for "proportion"; per-sample draws make output independent of workers
}

type imageEncoder struct{ opts ImageOptions }

func newImageEncoder(o ImageOptions) (Encoder, error) {
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
	return imageEncoder{o}, nil
}

func (e imageEncoder) Encode(v Value, sample uint64) (Encoded, error) {
	pix, w, h, err := toRGB(v)
	if err != nil {
		return Encoded{}, fmt.Errorf("%w: %v", ErrData, err)
	}
	pix, w, h = limitResolution(pix, w, h, e.opts.MaxResolution)
	if w > 0xffff || h > 0xffff {
		return Encoded{}, fmt.Errorf("%w: image %dx%d does not fit the format's 16-bit sizes (set max_resolution)", ErrData, w, h)
	}
	asJPEG := false
	switch e.opts.WriteMode {
	case "jpg":
		asJPEG = true
	case "smart":
		asJPEG = e.opts.SmartThreshold > 0 && w*h*3 > e.opts.SmartThreshold
	case "proportion":
		rng := rand.New(rand.NewPCG(e.opts.Seed, sample))
		asJPEG = rng.Float64() < e.opts.CompressProbability
	}
	col := make([]byte, 13)
	binary.LittleEndian.PutUint16(col[RGBWidthOff:], uint16(w))
	binary.LittleEndian.PutUint16(col[RGBHeightOff:], uint16(h))
	heap := pix
	col[RGBModeOff] = ModeRaw
	if asJPEG {
		col[RGBModeOff] = ModeJPEG
		if heap, err = jpeg.Encode(pix, w, h, e.opts.JPEGQuality); err != nil {
			return Encoded{}, err
		}
	}
	return Encoded{Column: col, Heap: heap, HasHeap: true, PtrOffset: RGBPtrOff}, nil
}

// toRGB returns HWC RGB pixels of v, decoding an image file or expanding
// grayscale and dropping alpha as needed.
func toRGB(v Value) ([]byte, int, int, error) {
	if v.Path != "" {
		data, err := os.ReadFile(v.Path)
		if err != nil {
			return nil, 0, 0, err
		}
		pix, w, h, err := decodeFile(data)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s: %w", v.Path, err)
		}
		return pix, w, h, nil
	}
	if v.Encoded {
		return decodeFile(v.Data)
	}
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

func decodeFile(data []byte) ([]byte, int, int, error) {
	if len(data) >= 2 && data[0] == 0xff && data[1] == 0xd8 {
		w, h, err := jpeg.DecodeConfig(data)
		if err != nil {
			return nil, 0, 0, err
		}
		d := jpeg.NewDecoder()
		defer d.Close()
		pix := make([]byte, w*h*3)
		if _, _, err := d.Decode(data, pix); err != nil {
			return nil, 0, 0, err
		}
		return pix, w, h, nil
	}
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

// limitResolution downscales (area) so the longer side is at most maxRes, with
// FFCV's sizing: new size = int(ratio * size) per axis.
func limitResolution(pix []byte, w, h, maxRes int) ([]byte, int, int) {
	if maxRes <= 0 || max(w, h) <= maxRes {
		return pix, w, h
	}
	ratio := float64(maxRes) / float64(max(w, h))
	nw, nh := max(int(ratio*float64(w)), 1), max(int(ratio*float64(h)), 1)
	out := make([]byte, nw*nh*3)
	imgproc.ResizeArea(out, nw, nh, pix, w, h, w*3, 3)
	return out, nw, nh
}
