// Package beton reads and writes .beton files (format version 2), the single
// file FFCV 1.0 stores a dataset in: a header, field descriptors, a metadata
// table with one row per sample, a heap of fixed-size pages, and an allocation
// table. See shared/FORMAT.md.
package beton

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Format constants.
const (
	Version         = 2
	HeaderSize      = 24
	AllocEntrySize  = 24
	DefaultPageSize = 8 << 20
	MinPageSize     = 2 << 20
	MaxPageSize     = 4<<30 - 1
)

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("not a valid .beton file")

// Header is the fixed 24-byte file header.
type Header struct {
	Version       uint16
	NumFields     uint16
	PageSize      uint32
	NumSamples    uint64
	AllocTablePtr uint64
}

func (h *Header) marshal() []byte {
	b := make([]byte, HeaderSize)
	binary.LittleEndian.PutUint16(b[0:], h.Version)
	binary.LittleEndian.PutUint16(b[2:], h.NumFields)
	binary.LittleEndian.PutUint32(b[4:], h.PageSize)
	binary.LittleEndian.PutUint64(b[8:], h.NumSamples)
	binary.LittleEndian.PutUint64(b[16:], h.AllocTablePtr)
	return b
}

func parseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes is shorter than the %d-byte header", ErrFormat, len(b), HeaderSize)
	}
	h := Header{
		Version:       binary.LittleEndian.Uint16(b[0:]),
		NumFields:     binary.LittleEndian.Uint16(b[2:]),
		PageSize:      binary.LittleEndian.Uint32(b[4:]),
		NumSamples:    binary.LittleEndian.Uint64(b[8:]),
		AllocTablePtr: binary.LittleEndian.Uint64(b[16:]),
	}
	if h.Version != Version {
		if kind := looksLike(b); kind != "" || h.Version > maxPlausibleVersion {
			return h, fmt.Errorf("%w: it does not begin with a .beton header%s", ErrFormat, kind)
		}
		return h, fmt.Errorf("%w: version %d, only version %d is supported", ErrFormat, h.Version, Version)
	}
	if err := CheckPageSize(uint64(h.PageSize)); err != nil {
		return h, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return h, nil
}

// maxPlausibleVersion bounds the versions reported as such: a larger first
// uint16 is another kind of file (a JPEG's begins 0xFFD8, "version 55551").
const maxPlausibleVersion = 16

// magics are the first bytes of files people mistake for a .beton.
var magics = []struct{ prefix, name string }{
	{"\xff\xd8\xff", "a JPEG image"},
	{"\x89PNG", "a PNG image"},
	{"PAR1", "a Parquet file"},
	{"PK\x03\x04", "a zip archive"},
	{"\x1f\x8b", "a gzip file"},
	{"RIFF", "a RIFF file (WebP, WAV, AVI)"},
	{"\x1a\x45\xdf\xa3", "a Matroska/WebM video"},
}

// looksLike names the kind of file b begins like, as ": it is ..." (or "").
func looksLike(b []byte) string {
	for _, m := range magics {
		if strings.HasPrefix(string(b), m.prefix) {
			return ": it is " + m.name
		}
	}
	if len(b) >= 8 && string(b[4:8]) == "ftyp" {
		return ": it is an MP4/MOV video"
	}
	return ""
}

// CheckPageSize reports whether ps is a page size the format allows.
func CheckPageSize(ps uint64) error {
	if ps < MinPageSize || ps > MaxPageSize || ps&(ps-1) != 0 {
		return fmt.Errorf("page size %d must be a power of two, at least %d and below 4 GiB", ps, MinPageSize)
	}
	return nil
}

// AllocEntry is one allocation table entry: sample SampleID owns Size bytes at
// absolute file offset Ptr.
type AllocEntry struct {
	SampleID, Ptr, Size uint64
}
