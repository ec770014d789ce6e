package jpeg

/*
#cgo LDFLAGS: -ljpeg
#include "ffjpeg.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// ErrShortBuffer is wrapped by errors about a destination buffer that is
// too small for the result.
var ErrShortBuffer = errors.New("jpeg: destination buffer too small")

var errClosed = errors.New("jpeg: decoder is closed")

// A Decoder decodes JPEG images, reusing its libjpeg state and scratch
// buffers from one image to the next. A Decoder must not be used by more
// than one goroutine at a time; give each goroutine its own.
//
// Progressive images are buffered whole inside libjpeg; one that would need
// more than 1 GiB for that is rejected.
type Decoder struct {
	c       *C.ffj_dec // C memory; nil once closed
	cleanup runtime.Cleanup
	scratch []byte // decoded (scaled) crop before the final resize
	rs      imgproc.Resizer
	g       C.ffj_geom // request/result of the last decode; a field so it is not allocated per call
	src     []byte     // the input, copied (see own)
	session bool       // in a view session (BeginViews)
	owned   bool       // in a session, viewSrc holds its image
	viewSrc []byte     // the session's image, copied
	shared  int        // during a DecodeView: the ffj_geom.share of its decode
	timed   bool
	timing  Timing // of the last decode, when timed
}

// Timing is where the last decode of a timed Decoder spent its time, in
// nanoseconds. Entropy decoding and the rest of a decode (IDCT, upsampling,
// colour conversion) alternate MCU by MCU; Entropy is their split of the
// libjpeg call by the CPU's time-stamp counter, read around every MCU.
type Timing struct {
	Copy    int64 // copying the input: the page faults of a mapped file happen here
	Entropy int64 // entropy decoding, with the marker scan of a region decode and DecodeViews' copies of cached coefficients
	Decode  int64 // the libjpeg call, Entropy included
}

// SetTimed turns the timing of decodes on or off (see LastTiming). Timing
// reads the clock twice per MCU: a few percent of a decode.
func (d *Decoder) SetTimed(on bool) { d.timed = on }

// LastTiming is the Timing of the last decode (the zero Timing when the
// Decoder is not timed, or the decode failed).
func (d *Decoder) LastTiming() Timing {
	if !d.timed {
		return Timing{}
	}
	return d.timing
}

// NewDecoder returns a Decoder. Call Close to free its C memory promptly;
// a Decoder that becomes unreachable is freed by the garbage collector.
func NewDecoder() *Decoder {
	c := C.ffj_new()
	if c == nil {
		panic("jpeg: cannot allocate a libjpeg decoder")
	}
	d := &Decoder{c: c}
	d.cleanup = runtime.AddCleanup(d, func(c *C.ffj_dec) { C.ffj_free(c) }, c)
	return d
}

// Close frees the decoder's C memory. Calling Close more than once is
// harmless; other methods fail after Close.
func (d *Decoder) Close() {
	if d.c == nil {
		return
	}
	d.cleanup.Stop()
	C.ffj_free(d.c)
	d.c = nil
}

// DecodeConfig returns the width and height of the JPEG image in data,
// reading only its header.
func DecodeConfig(data []byte) (width, height int, err error) {
	d := NewDecoder()
	defer d.Close()
	return d.DecodeConfig(data)
}

// DecodeConfig is like the package-level DecodeConfig but reuses d.
func (d *Decoder) DecodeConfig(data []byte) (width, height int, err error) {
	if err := d.check(data); err != nil {
		return 0, 0, err
	}
	data = d.own(data)
	var w, h C.int
	rc := C.ffj_header(d.c, bytePtr(data), C.ulong(len(data)), &w, &h)
	if rc != C.FFJ_OK {
		return 0, 0, fmt.Errorf("jpeg: decode config: %s", d.message())
	}
	runtime.KeepAlive(d) // the cleanup must not free d.c during the call
	return int(w), int(h), nil
}

// Decode decodes the whole image in data into dst as RGB and returns its
// size. dst must hold at least width*height*3 bytes; if it does not, Decode
// returns the size and an error wrapping ErrShortBuffer, so the caller can
// retry with a bigger buffer.
func (d *Decoder) Decode(data []byte, dst []byte) (w, h int, err error) {
	g := &d.g
	*g = C.ffj_geom{scale_num: 8, cx1: -1}
	if err := d.decode(data, g, dst); err != nil {
		if errors.Is(err, ErrShortBuffer) {
			return int(g.img_w), int(g.img_h), err
		}
		return 0, 0, err
	}
	return int(g.img_w), int(g.img_h), nil
}

// entropyDecode only Huffman-decodes the first rows of data at scale m/8,
// for profiling the decoder.
func (d *Decoder) entropyDecode(data []byte, m, rows int) error {
	if err := d.check(data); err != nil {
		return err
	}
	rc := C.ffj_entropy(d.c, bytePtr(data), C.ulong(len(data)), C.int(m), C.int(rows))
	runtime.KeepAlive(d)
	if rc != C.FFJ_OK {
		return fmt.Errorf("jpeg: entropy decode: %s", d.message())
	}
	return nil
}

// ffjGeom is the C geometry, named for the tests (cgo is not allowed there).
type ffjGeom = C.ffj_geom

// cutRegions turns region streams (ffj_region_stream) on or off, regionCut
// reports whether the last decode used one, and regionTableCap the room in
// its interval table (for tests).
func (d *Decoder) cutRegions(on bool) { C.ffj_cut_regions(d.c, cBool(on)) }

func (d *Decoder) regionCut() bool { return C.ffj_region_cut(d.c) != 0 }

// transcodeSpliced reports whether the last Transcode spliced restart
// markers into the source's scan (for tests).
func (d *Decoder) transcodeSpliced() bool { return C.ffj_transcode_spliced(d.c) != 0 }

func (d *Decoder) regionTableCap() int { return int(C.ffj_region_table_cap(d.c)) }

// intervalDecodes returns how many times DecodeViews entropy-decoded each
// restart interval of the last image's scan, up to the last one a view
// needed (for tests).
func (d *Decoder) intervalDecodes() []int {
	n := int(C.ffj_interval_decodes(d.c, nil, 0))
	counts := make([]C.int, n)
	if n > 0 {
		C.ffj_interval_decodes(d.c, &counts[0], C.size_t(n))
	}
	out := make([]int, n)
	for i, c := range counts {
		out[i] = int(c)
	}
	return out
}

func (d *Decoder) check(data []byte) error {
	if d.c == nil {
		return errClosed
	}
	if len(data) == 0 {
		return errors.New("jpeg: empty input")
	}
	return nil
}

// decode runs one libjpeg decode of the request in g into buf.
func (d *Decoder) decode(data []byte, g *C.ffj_geom, buf []byte) error {
	if err := d.check(data); err != nil {
		return err
	}
	if d.timed {
		return d.decodeTimed(data, g, buf)
	}
	data = d.input(data, g)
	return d.result(C.ffj_decode(d.c, bytePtr(data), C.ulong(len(data)), g, bytePtr(buf), C.size_t(len(buf))), g, buf)
}

// decodeTimed is decode, recording its Timing.
func (d *Decoder) decodeTimed(data []byte, g *C.ffj_geom, buf []byte) error {
	d.timing = Timing{}
	t0 := time.Now()
	data = d.input(data, g)
	t1 := time.Now()
	g.timed = 1
	rc := C.ffj_decode(d.c, bytePtr(data), C.ulong(len(data)), g, bytePtr(buf), C.size_t(len(buf)))
	dec := int64(time.Since(t1))
	err := d.result(rc, g, buf)
	if err == nil {
		d.timing = Timing{Copy: int64(t1.Sub(t0)), Decode: dec}
		if g.total_ticks > 0 {
			d.timing.Entropy = int64(float64(dec) * float64(g.entropy_ticks) / float64(g.total_ticks))
		}
	}
	return err
}

// result turns ffj_decode's return code into an error.
func (d *Decoder) result(rc C.int, g *C.ffj_geom, buf []byte) error {
	runtime.KeepAlive(d)
	switch rc {
	case C.FFJ_OK:
		return nil
	case C.FFJ_ERR_SMALL:
		return fmt.Errorf("%w: have %d bytes, need %d for %dx%d pixels",
			ErrShortBuffer, len(buf), int(g.buf_w)*int(g.buf_h)*3, g.buf_w, g.buf_h)
	case C.FFJ_ERR_REGION:
		return fmt.Errorf("jpeg: crop (%d,%d)-(%d,%d) is not inside the %dx%d image",
			g.cx0, g.cy0, g.cx1, g.cy1, g.img_w, g.img_h)
	default:
		return fmt.Errorf("jpeg: decode: %s", d.message())
	}
}

// own copies the input into the decoder's buffer before libjpeg sees it. The
// input is often a mapped file: if the file shrinks underneath, a fault in C
// kills the process, while a fault in this Go copy becomes a panic the caller
// can recover (debug.SetPanicOnFault). The copy costs about 1% of a decode.
func (d *Decoder) own(data []byte) []byte {
	d.src = append(d.src[:0], data...)
	return d.src
}

// input is the data to hand to C for the request g: a copy (see own), or
// during a DecodeView the copy already made, with g sharing its coefficients.
func (d *Decoder) input(data []byte, g *C.ffj_geom) []byte {
	if d.shared != 0 {
		g.share = C.int(d.shared)
		return data
	}
	return d.own(data)
}

func (d *Decoder) message() string {
	return C.GoString(C.ffj_msg(d.c))
}

// bytePtr returns a C pointer to b's first byte, or nil for an empty b.
// C only uses it during the call it is passed to.
func bytePtr(b []byte) *C.uchar {
	if len(b) == 0 {
		return nil
	}
	return (*C.uchar)(unsafe.Pointer(&b[0]))
}
