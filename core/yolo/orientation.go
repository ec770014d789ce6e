package yolo

import (
	"encoding/binary"
	"io"
)

// orientation is a JPEG's EXIF orientation tag (1: as stored; 0: none or
// not a JPEG). Ultralytics reads labels in the frame the tag turns the
// image to, while the writer stores the pixels as stored: an image whose
// tag turns it cannot be converted without moving its labels.
func orientation(r io.Reader) int {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:2]); err != nil || b[0] != 0xFF || b[1] != 0xD8 {
		return 0
	}
	for {
		if _, err := io.ReadFull(r, b[:4]); err != nil || b[0] != 0xFF {
			return 0
		}
		marker, n := b[1], int(binary.BigEndian.Uint16(b[2:]))-2
		if marker == 0xDA || marker == 0xD9 || n < 0 { // the scan: no EXIF before it
			return 0
		}
		seg := make([]byte, n)
		if _, err := io.ReadFull(r, seg); err != nil {
			return 0
		}
		if marker == 0xE1 && len(seg) > 14 && string(seg[:6]) == "Exif\x00\x00" {
			return exifOrientation(seg[6:])
		}
	}
}

// exifOrientation reads tag 0x0112 of IFD0 of a TIFF structure.
func exifOrientation(t []byte) int {
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 0
	}
	off := int(bo.Uint32(t[4:8]))
	if off < 8 || off+2 > len(t) {
		return 0
	}
	n := int(bo.Uint16(t[off:]))
	for k := range n {
		e := off + 2 + 12*k
		if e+12 > len(t) {
			return 0
		}
		if bo.Uint16(t[e:]) == 0x0112 {
			return int(bo.Uint16(t[e+8:]))
		}
	}
	return 0
}
