package main

// The helpers of FFCV's ffcv.libffcv module (memcpy, imdecode,
// resize_crop, and FFCV-SSL's pad), served by the same Go code the loader
// runs, so programs and custom operations that call them get our decoder
// and resizer.

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"image"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/pipeline/transform"
)

// ffcv_memcpy copies n bytes from src to dst (FFCV's my_memcpy).
//
//export ffcv_memcpy
func ffcv_memcpy(src, dst unsafe.Pointer, n C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	s, e := cArray((*byte)(src), uint64(n), "source")
	if e != nil {
		return fail(err, e)
	}
	d, e := cArray((*byte)(dst), uint64(n), "destination")
	if e != nil {
		return fail(err, e)
	}
	copy(d, s)
	return 0
}

// ffcv_imdecode decodes the JPEG in data into dst (dstLen bytes), as FFCV's
// imdecode: the cropW×cropH rectangle at (offX, offY) when crop is set (else
// the whole srcW×srcH image), scaled by num/den, mirrored when flip is set.
// At scale 1 the pixels are exact; other scales are area-resized.
//
//export ffcv_imdecode
func ffcv_imdecode(data unsafe.Pointer, n C.uint64_t, dst unsafe.Pointer, dstLen C.uint64_t,
	srcH, srcW, cropH, cropW, offX, offY, num, den C.int64_t, crop, flip C.int32_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	in, e := cArray((*byte)(data), uint64(n), "source")
	if e != nil {
		return fail(err, e)
	}
	out, e := cArray((*byte)(dst), uint64(dstLen), "destination")
	if e != nil {
		return fail(err, e)
	}
	d := jpeg.NewDecoder()
	defer d.Close()
	w, h, e := d.DecodeConfig(in)
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", field.ErrData, e))
	}
	if int64(w) != int64(srcW) || int64(h) != int64(srcH) {
		return fail(err, fmt.Errorf("%w: the JPEG is %dx%d (width x height), not %dx%d", errArgument, w, h, srcW, srcH))
	}
	r := image.Rect(0, 0, w, h)
	if crop != 0 {
		r = image.Rect(int(offX), int(offY), int(offX+cropW), int(offY+cropH))
		if r.Empty() || !r.In(image.Rect(0, 0, w, h)) {
			return fail(err, fmt.Errorf("%w: crop %v is not inside the %dx%d image", errArgument, r, w, h))
		}
	}
	if num <= 0 || den <= 0 {
		return fail(err, fmt.Errorf("%w: scale %d/%d must be positive", errArgument, num, den))
	}
	// TurboJPEG's TJSCALED: ceil(size * num / den).
	ow := int((int64(r.Dx())*int64(num) + int64(den) - 1) / int64(den))
	oh := int((int64(r.Dy())*int64(num) + int64(den) - 1) / int64(den))
	if need := ow * oh * 3; len(out) < need {
		return fail(err, fmt.Errorf("%w: destination has %d bytes, the %dx%d result needs %d", errArgument, len(out), ow, oh, need))
	}
	switch {
	case ow == w && oh == h:
		_, _, e = d.Decode(in, out)
	case ow == r.Dx() && oh == r.Dy():
		full := make([]byte, w*h*3)
		if _, _, e = d.Decode(in, full); e == nil {
			imgproc.Crop(out[:0], full, w*3, 3, r)
		}
	default:
		e = d.DecodeCropResize(in, r, ow, oh, out)
	}
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", field.ErrData, e))
	}
	if flip != 0 {
		imgproc.FlipHorizontal(out, ow, oh, 3)
	}
	return 0
}

// ffcv_resize_crop resizes rows [r0, r1) and columns [c0, c1) of the
// srcH×srcW RGB image src into the dstH×dstW image dst with area
// interpolation (OpenCV's INTER_AREA), as FFCV's resize_crop.
//
//export ffcv_resize_crop
func ffcv_resize_crop(src unsafe.Pointer, srcH, srcW, r0, r1, c0, c1 C.int64_t,
	dst unsafe.Pointer, dstH, dstW C.int64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	s, d, r, e := cropArgs(src, srcH, srcW, r0, r1, c0, c1, dst, dstH, dstW)
	if e != nil {
		return fail(err, e)
	}
	stride := int(srcW) * 3
	imgproc.ResizeArea(d, int(dstW), int(dstH), imgproc.SubRect(s, stride, 3, r), r.Dx(), r.Dy(), stride, 3)
	return 0
}

// ffcv_pad copies rows [r0, r1) and columns [c0, c1) of the srcH×srcW RGB
// image src to the top-left corner of the dstH×dstW RGB image dst and
// zeroes the rest of dst, as FFCV-SSL's pad.
//
//export ffcv_pad
func ffcv_pad(src unsafe.Pointer, srcH, srcW, r0, r1, c0, c1 C.int64_t,
	dst unsafe.Pointer, dstH, dstW C.int64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	s, d, r, e := cropArgs(src, srcH, srcW, r0, r1, c0, c1, dst, dstH, dstW)
	if e != nil {
		return fail(err, e)
	}
	if r.Dy() > int(dstH) || r.Dx() > int(dstW) {
		return fail(err, fmt.Errorf("%w: the %dx%d region does not fit the %dx%d destination",
			errArgument, r.Dy(), r.Dx(), dstH, dstW))
	}
	stride := int(srcW) * 3
	imgproc.PadTopLeft(d, int(dstW), int(dstH), imgproc.SubRect(s, stride, 3, r), stride, r.Dx(), r.Dy(), 3)
	return 0
}

// cropArgs checks the arguments ffcv_resize_crop and ffcv_pad share and
// returns the srcH×srcW RGB source, the dstH×dstW RGB destination and the
// region of the source: rows [r0, r1) and columns [c0, c1), not empty and
// inside it.
func cropArgs(src unsafe.Pointer, srcH, srcW, r0, r1, c0, c1 C.int64_t,
	dst unsafe.Pointer, dstH, dstW C.int64_t) (s, d []byte, r image.Rectangle, err error) {
	if srcH <= 0 || srcW <= 0 || dstH <= 0 || dstW <= 0 {
		return nil, nil, r, fmt.Errorf("%w: image sizes %dx%d -> %dx%d must be positive", errArgument, srcH, srcW, dstH, dstW)
	}
	r = image.Rect(int(c0), int(r0), int(c1), int(r1))
	if r.Empty() || !r.In(image.Rect(0, 0, int(srcW), int(srcH))) {
		return nil, nil, r, fmt.Errorf("%w: rows [%d, %d) and columns [%d, %d) are not inside the %dx%d image",
			errArgument, r0, r1, c0, c1, srcH, srcW)
	}
	if s, err = cArray((*byte)(src), uint64(srcH*srcW*3), "source"); err != nil {
		return nil, nil, r, err
	}
	if d, err = cArray((*byte)(dst), uint64(dstH*dstW*3), "destination"); err != nil {
		return nil, nil, r, err
	}
	return s, d, r, nil
}

// ffcv_encode_jpeg compresses the h×w RGB image pix as a JPEG of the given
// quality (FFCV's encode_jpeg); *out (free it with ffcv_free) holds *outLen bytes.
//
//export ffcv_encode_jpeg
func ffcv_encode_jpeg(pix unsafe.Pointer, h, w, quality C.int64_t, out *unsafe.Pointer, outLen *C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	if h <= 0 || w <= 0 || quality < 1 || quality > 100 || out == nil || outLen == nil {
		return fail(err, fmt.Errorf("%w: image %dx%d, quality %d (1-100)", errArgument, h, w, quality))
	}
	p, e := cArray((*byte)(pix), uint64(h*w*3), "pixels")
	if e != nil {
		return fail(err, e)
	}
	data, e := jpeg.Encode(p, int(w), int(h), int(quality))
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", field.ErrData, e))
	}
	*out = C.CBytes(data)
	*outLen = C.uint64_t(len(data))
	return 0
}

// ffcv_normalize_table writes the lookup table of a NormalizeImage spec
// ({"mean": [...], "std": [...], "dtype": "<f2"|"<f4"}) into out: 256 rows
// (the byte value) of one output value per channel, little endian, in the
// spec's dtype. outLen must be 256 × channels × the dtype's size. The GPU
// path of NormalizeImage looks its values up there, so CPU and GPU agree.
//
//export ffcv_normalize_table
func ffcv_normalize_table(spec *C.char, out unsafe.Pointer, outLen C.uint64_t, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	if spec == nil {
		return fail(err, fmt.Errorf("%w: NULL spec", errArgument))
	}
	table, _, _, e := transform.NormalizeTable(json.RawMessage(C.GoString(spec)))
	if e != nil {
		return fail(err, fmt.Errorf("%w: %v", errArgument, e))
	}
	if uint64(outLen) != uint64(len(table)) {
		return fail(err, fmt.Errorf("%w: the table is %d bytes, out has %d", errArgument, len(table), uint64(outLen)))
	}
	dst, e := cArray((*byte)(out), uint64(outLen), "table")
	if e != nil {
		return fail(err, e)
	}
	copy(dst, table)
	return 0
}
