package audio

import (
	"encoding/binary"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// wavFile is a parsed WAV: where its samples lie and how they are stored.
type wavFile struct {
	data     []byte // the data chunk's whole frames
	channels int
	rate     int
	bits     int // 8, 16, 24, 32 (int or float), 64 (float)
	float    bool
	frames   uint64
}

func (w wavFile) info() Info {
	b := w.bits
	if w.float {
		b = 32
	}
	return Info{Codec: field.AudioWAV, SampleRate: w.rate, Channels: w.channels, Bits: b, Frames: w.frames}
}

// parseWAV reads a RIFF/WAVE file's fmt and data chunks. A data chunk
// that claims more bytes than the file holds is truncation, and refused.
func parseWAV(b []byte) (wavFile, error) {
	var w wavFile
	if len(b) < 12 {
		return w, corruptf("WAV of %d bytes", len(b))
	}
	fmtSeen := false
	pos := 12
	for {
		if pos+8 > len(b) {
			if !fmtSeen {
				return w, corruptf("WAV without a fmt chunk (truncated?)")
			}
			return w, corruptf("WAV without a data chunk (truncated?)")
		}
		id := string(b[pos : pos+4])
		size := uint64(binary.LittleEndian.Uint32(b[pos+4:]))
		body := pos + 8
		switch id {
		case "fmt ":
			if size < 16 || uint64(body)+size > uint64(len(b)) {
				return w, corruptf("WAV fmt chunk of %d bytes (truncated?)", size)
			}
			f := b[body:]
			tag := binary.LittleEndian.Uint16(f)
			w.channels = int(binary.LittleEndian.Uint16(f[2:]))
			w.rate = int(binary.LittleEndian.Uint32(f[4:]))
			w.bits = int(binary.LittleEndian.Uint16(f[14:]))
			if tag == 0xFFFE && size >= 40 { // WAVE_FORMAT_EXTENSIBLE: the sub-format's tag
				tag = binary.LittleEndian.Uint16(f[24:])
			}
			switch {
			case tag == 1 && (w.bits == 8 || w.bits == 16 || w.bits == 24 || w.bits == 32):
			case tag == 3 && (w.bits == 32 || w.bits == 64):
				w.float = true
			default:
				return w, corruptf("WAV of format %#x with %d-bit samples (PCM 8/16/24/32 or float 32/64 are read)", tag, w.bits)
			}
			if w.rate == 0 {
				return w, corruptf("sample rate 0 in the WAV header")
			}
			if w.channels < 1 || w.channels > field.MaxAudioChannels {
				return w, corruptf("%d channels in the WAV header (1 to %d)", w.channels, field.MaxAudioChannels)
			}
			fmtSeen = true
		case "data":
			if !fmtSeen {
				return w, corruptf("WAV data chunk before its fmt chunk")
			}
			left := uint64(len(b) - body)
			if size == 0xFFFFFFFF { // unknown (a stream, RF64): to the end
				size = left
			}
			if size > left {
				return w, corruptf("truncated WAV: its data chunk says %d bytes, %d follow", size, left)
			}
			frame := uint64(w.channels * w.bits / 8)
			if size%frame != 0 {
				return w, corruptf("truncated WAV: %d data bytes are not whole %d-byte frames", size, frame)
			}
			w.data = b[body : uint64(body)+size]
			w.frames = size / frame
			return w, nil
		}
		next := uint64(body) + size + size&1 // chunks are padded to even sizes
		if next > uint64(len(b)) {
			return w, corruptf("truncated WAV: its %q chunk runs past the end", id)
		}
		pos = int(next)
	}
}

// window writes frames [start, start+n) as floats; it returns the
// frames there are (fewer when the clip ends first).
func (w wavFile) window(start uint64, n, stride int, out []float32) (uint64, error) {
	if start >= w.frames {
		return 0, nil
	}
	k := min(uint64(n), w.frames-start)
	bps := w.bits / 8
	fb := bps * w.channels
	src := w.data[start*uint64(fb) : (start+k)*uint64(fb)]
	for c := 0; c < w.channels; c++ {
		dst := out[c*stride : c*stride+int(k)]
		p := src[c*bps:]
		switch {
		case w.float && bps == 4:
			for i := range dst {
				dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[i*fb:]))
			}
		case w.float:
			for i := range dst {
				dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(p[i*fb:])))
			}
		case bps == 1:
			for i := range dst {
				dst[i] = float32(int(p[i*fb])-128) / 128
			}
		case bps == 2:
			for i := range dst {
				dst[i] = float32(int16(binary.LittleEndian.Uint16(p[i*fb:]))) / (1 << 15)
			}
		case bps == 3:
			for i := range dst {
				q := p[i*fb:]
				dst[i] = float32(int32(uint32(q[0])<<8|uint32(q[1])<<16|uint32(q[2])<<24)>>8) / (1 << 23)
			}
		default:
			for i := range dst {
				dst[i] = float32(int32(binary.LittleEndian.Uint32(p[i*fb:]))) / (1 << 31)
			}
		}
	}
	return k, nil
}

// ints returns an integer WAV's samples, planar.
func (w wavFile) ints() []int32 {
	n := int(w.frames)
	out := make([]int32, n*w.channels)
	bps := w.bits / 8
	fb := bps * w.channels
	for c := 0; c < w.channels; c++ {
		dst := out[c*n : (c+1)*n]
		p := w.data[c*bps:]
		for i := range dst {
			q := p[i*fb:]
			switch bps {
			case 1:
				dst[i] = int32(q[0]) - 128
			case 2:
				dst[i] = int32(int16(binary.LittleEndian.Uint16(q)))
			case 3:
				dst[i] = int32(uint32(q[0])<<8|uint32(q[1])<<16|uint32(q[2])<<24) >> 8
			default:
				dst[i] = int32(binary.LittleEndian.Uint32(q))
			}
		}
	}
	return out
}

// WAV writes planar samples as a WAV file: int16 or int32 PCM (bits 16
// or 32, from ints) or 32-bit float (from floats).
func WAV(ints []int32, floats []float32, channels, bits, rate int) []byte {
	n := max(len(ints), len(floats)) / channels
	bps := bits / 8
	size := n * channels * bps
	out := make([]byte, 44+size)
	copy(out, "RIFF")
	binary.LittleEndian.PutUint32(out[4:], uint32(36+size))
	copy(out[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(out[16:], 16)
	tag := uint16(1)
	if floats != nil {
		tag = 3
	}
	binary.LittleEndian.PutUint16(out[20:], tag)
	binary.LittleEndian.PutUint16(out[22:], uint16(channels))
	binary.LittleEndian.PutUint32(out[24:], uint32(rate))
	binary.LittleEndian.PutUint32(out[28:], uint32(rate*channels*bps))
	binary.LittleEndian.PutUint16(out[32:], uint16(channels*bps))
	binary.LittleEndian.PutUint16(out[34:], uint16(bits))
	copy(out[36:], "data")
	binary.LittleEndian.PutUint32(out[40:], uint32(size))
	d := out[44:]
	for i := 0; i < n; i++ {
		for c := 0; c < channels; c++ {
			at := (i*channels + c) * bps
			switch {
			case floats != nil:
				binary.LittleEndian.PutUint32(d[at:], math.Float32bits(floats[c*n+i]))
			case bps == 2:
				binary.LittleEndian.PutUint16(d[at:], uint16(int16(ints[c*n+i])))
			default:
				binary.LittleEndian.PutUint32(d[at:], uint32(ints[c*n+i]))
			}
		}
	}
	return out
}
