//go:build !ffcv_nocodecs

package audio

// The C codecs: libFLAC, libopusfile (with libopus and libogg) and minimp3.
// A build with -tags ffcv_nocodecs leaves them out (nocodecs.go): WAV
// alone is read then. -fvisibility=hidden keeps minimp3's functions and
// this package's C private to the library, as the wheels' static libFLAC,
// libopus and libogg are: another copy loaded in the process cannot take
// their place.

/*
#cgo CFLAGS: -O2 -fvisibility=hidden -I/usr/include/opus
#cgo LDFLAGS: -lFLAC -lopusfile -lopus -logg -lm
#include <stdlib.h>
#include "codecs.h"
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// cInfo reads the header of a clip the C side decodes.
func cInfo(codec byte, data []byte) (Info, error) {
	var ci C.ffa_info
	var msg [256]C.char
	p, l := cBytes(data)
	var rc C.int
	switch codec {
	case field.AudioFLAC:
		rc = C.ffa_flac_info(p, l, &ci, &msg[0], C.size_t(len(msg)))
	case field.AudioOpus:
		rc = C.ffa_opus_info(p, l, &ci, &msg[0], C.size_t(len(msg)))
	default:
		rc = C.ffa_mp3_info(p, l, &ci, &msg[0], C.size_t(len(msg)))
	}
	if rc != 0 {
		return Info{}, corruptf("%s", C.GoString(&msg[0]))
	}
	return Info{Codec: codec, SampleRate: int(ci.rate), Channels: int(ci.channels), Bits: int(ci.bits), Frames: uint64(ci.total)}, nil
}

func cWindow(codec byte, data []byte, channels int, start uint64, n, stride int, out []float32) (uint64, error) {
	info, err := cInfo(codec, data)
	if err != nil {
		return 0, err
	}
	if info.Channels != channels {
		return 0, corruptf("the %s has %d channels, its metadata %d", field.AudioCodecName(codec), info.Channels, channels)
	}
	var msg [256]C.char
	p, l := cBytes(data)
	var rc C.int
	var got C.uint64_t
	o := (*C.float)(unsafe.Pointer(&out[0]))
	switch codec {
	case field.AudioFLAC:
		rc = C.ffa_flac_window(p, l, C.uint64_t(start), C.uint64_t(n), o, C.size_t(stride), &got, &msg[0], C.size_t(len(msg)))
	case field.AudioOpus:
		rc = C.ffa_opus_window(p, l, C.uint64_t(start), C.uint64_t(n), o, C.size_t(stride), &got, &msg[0], C.size_t(len(msg)))
	default:
		rc = C.ffa_mp3_window(p, l, C.uint64_t(start), C.uint64_t(n), o, C.size_t(stride), &got, &msg[0], C.size_t(len(msg)))
	}
	if rc != 0 {
		return uint64(got), corruptf("%s", C.GoString(&msg[0]))
	}
	return uint64(got), nil
}

func cBytes(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

// flacAll decodes a whole FLAC stream into out (frames per channel, planar).
func flacAll(data []byte, out []int32, frames uint64) (uint64, error) {
	var got C.uint64_t
	var msg [256]C.char
	p, l := cBytes(data)
	if C.ffa_flac_all(p, l, (*C.int32_t)(unsafe.Pointer(&out[0])), C.uint64_t(frames), &got, &msg[0], C.size_t(len(msg))) != 0 {
		return uint64(got), corruptf("%s", C.GoString(&msg[0]))
	}
	return uint64(got), nil
}

func flacEncode(pcm []int32, channels, bits, rate int) ([]byte, error) {
	var out *C.uint8_t
	var n C.size_t
	var msg [256]C.char
	if C.ffa_flac_encode((*C.int32_t)(unsafe.Pointer(&pcm[0])), C.uint64_t(len(pcm)/channels), C.unsigned(channels),
		C.unsigned(bits), C.unsigned(rate), &out, &n, &msg[0], C.size_t(len(msg))) != 0 {
		return nil, errors.New("audio: " + C.GoString(&msg[0]))
	}
	defer C.free(unsafe.Pointer(out))
	return C.GoBytes(unsafe.Pointer(out), C.int(n)), nil
}
