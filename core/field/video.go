package field

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
)

// Video is VideoField: a clip of frames per sample, each frame a JPEG with
// restart markers (as RGBImageField stores images), all of one size. Its
// type id lies beside the target and text types, far from FFCV's, which
// cannot read it: FFCV fails on an unknown type id.
const Video Type = 103

// VideoArgs are a Video field's descriptor arguments, stored as JSON
// (zero-padded) in the 1024 argument bytes.
type VideoArgs struct {
	// Encoding of the frames: "jpeg" (the only one).
	Encoding string `json:"encoding"`
}

// The Video column, align 8: {ptr u64, size u64, fps f64, frames u32,
// width u32, height u32, encoding u8, 3 zero bytes}. size is the whole
// allocation: the frame table, then the frames.
const (
	VideoColumnSize = 40
	VideoJPEG       = 0
)

// VideoMeta is a Video column, decoded.
type VideoMeta struct {
	Ptr, Size     uint64
	FPS           float64 // 0 when unknown (frames given without a rate)
	Frames        int
	Width, Height int
	Encoding      byte
}

// ParseVideoMeta decodes a Video column.
func ParseVideoMeta(col []byte) VideoMeta {
	return VideoMeta{
		Ptr: binary.LittleEndian.Uint64(col), Size: binary.LittleEndian.Uint64(col[8:]),
		FPS:    math.Float64frombits(binary.LittleEndian.Uint64(col[16:])),
		Frames: int(binary.LittleEndian.Uint32(col[24:])),
		Width:  int(binary.LittleEndian.Uint32(col[28:])), Height: int(binary.LittleEndian.Uint32(col[32:])),
		Encoding: col[36],
	}
}

// Column encodes m (its Ptr left for the writer to fill).
func (m VideoMeta) Column() []byte {
	col := make([]byte, VideoColumnSize)
	binary.LittleEndian.PutUint64(col, m.Ptr)
	binary.LittleEndian.PutUint64(col[8:], m.Size)
	binary.LittleEndian.PutUint64(col[16:], math.Float64bits(m.FPS))
	binary.LittleEndian.PutUint32(col[24:], uint32(m.Frames))
	binary.LittleEndian.PutUint32(col[28:], uint32(m.Width))
	binary.LittleEndian.PutUint32(col[32:], uint32(m.Height))
	col[36] = m.Encoding
	return col
}

// PackFrames lays frames out as a Video allocation: frames+1 u32 offsets
// from the allocation's start (frame k is [off[k], off[k+1])), then the
// frames back to back. A sample lies in one page (< 4 GiB), so u32 is
// enough; the writer refuses larger samples.
func PackFrames(frames [][]byte) ([]byte, error) {
	total := 4 * (len(frames) + 1)
	for _, f := range frames {
		total += len(f)
	}
	if total > math.MaxUint32 {
		return nil, fmt.Errorf("%w: %d frames take %d bytes, more than a page can hold", ErrData, len(frames), total)
	}
	out := make([]byte, 4*(len(frames)+1), total)
	off := len(out)
	for k, f := range frames {
		binary.LittleEndian.PutUint32(out[4*k:], uint32(off))
		out = append(out, f...)
		off += len(f)
	}
	binary.LittleEndian.PutUint32(out[4*len(frames):], uint32(off))
	return out, nil
}

// VideoFrame returns frame k of a Video allocation of frames frames,
// checking the frame table against the allocation so that a corrupt file
// gives an error, never a bad slice.
func VideoFrame(heap []byte, frames, k int) ([]byte, error) {
	if k < 0 || k >= frames {
		return nil, fmt.Errorf("frame %d of a %d-frame video", k, frames)
	}
	if uint64(len(heap)) < 4*(uint64(frames)+1) {
		return nil, fmt.Errorf("%w: video of %d frames has %d bytes, less than its frame table", ErrData, frames, len(heap))
	}
	lo := uint64(binary.LittleEndian.Uint32(heap[4*k:]))
	hi := uint64(binary.LittleEndian.Uint32(heap[4*k+4:]))
	if lo < 4*(uint64(frames)+1) || lo > hi || hi > uint64(len(heap)) {
		return nil, fmt.Errorf("%w: frame %d of the video lies at [%d, %d) of its %d bytes", ErrData, k, lo, hi, len(heap))
	}
	return heap[lo:hi:hi], nil
}

// CheckVideo checks a Video column against the field's limits; its frames
// are checked as they are read (VideoFrame).
func CheckVideo(m VideoMeta) error {
	switch {
	case m.Encoding != VideoJPEG:
		return fmt.Errorf("%w: unknown video encoding %d", ErrData, m.Encoding)
	case m.Frames < 1:
		return fmt.Errorf("%w: video has %d frames", ErrData, m.Frames)
	case m.Width < 1 || m.Height < 1 || m.Width > 0xffff || m.Height > 0xffff:
		return fmt.Errorf("%w: video frames of %dx%d", ErrData, m.Width, m.Height)
	case math.IsNaN(m.FPS) || m.FPS < 0 || math.IsInf(m.FPS, 0):
		return fmt.Errorf("%w: video frame rate %g", ErrData, m.FPS)
	}
	return nil
}

func (d *Desc) videoArgs() error {
	b := d.Args
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	var a VideoArgs
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("field %q: %v arguments: %w", d.Name, d.Type, err)
	}
	if a.Encoding != "jpeg" {
		return fmt.Errorf("field %q: video encoding %q (want jpeg)", d.Name, a.Encoding)
	}
	// Args in canonical form, so equal fields have equal arguments (shards).
	d.Args = make([]byte, ArgsSize)
	return marshalVideo(d.Args)
}

func marshalVideo(args []byte) error {
	b, err := json.Marshal(VideoArgs{Encoding: "jpeg"})
	if err != nil {
		return err
	}
	copy(args, b)
	return nil
}
