package field

import "encoding/binary"

// RGBMeta is an RGBImageField's metadata column, decoded: the one place that
// knows its byte layout besides the writer (FFCV's mode u1, width u2,
// height u2, data_ptr u8, packed).
type RGBMeta struct {
	Mode          byte // ModeRaw or ModeJPEG
	Width, Height int
	Ptr           uint64 // where the pixels or the JPEG start in the file
}

// ParseRGBMeta decodes col, an RGB column (13 bytes).
func ParseRGBMeta(col []byte) RGBMeta {
	return RGBMeta{
		Mode:   col[RGBModeOff],
		Width:  int(binary.LittleEndian.Uint16(col[RGBWidthOff:])),
		Height: int(binary.LittleEndian.Uint16(col[RGBHeightOff:])),
		Ptr:    binary.LittleEndian.Uint64(col[RGBPtrOff:]),
	}
}

// Aspect is the image's height / width (0 for an empty image): the key of
// the rect order (order.Rect), which the loader and the letterbox that
// batches by it both read here.
func (m RGBMeta) Aspect() float64 {
	if m.Width == 0 {
		return 0
	}
	return float64(m.Height) / float64(m.Width)
}
