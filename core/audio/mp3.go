package audio

import (
	"bytes"
	"encoding/binary"
)

// mp3File is what a scan of an MP3's frame headers finds (no decoding):
// the decoding (minimp3, in C) skips a frame it cannot find, so a file cut
// inside its last frame is caught here.
type mp3File struct {
	rate       int
	frames     int    // audio frames, the Xing/Info frame not counted
	xing       bool   // the first frame is a Xing/Info frame
	xingFrames uint64 // its frame count, 0 when it gives none
}

var (
	mp3Rates    = [3][3]int{{44100, 48000, 32000}, {22050, 24000, 16000}, {11025, 12000, 8000}}
	mp3Bitrates = [2][16]int{
		{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, -1},
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, -1},
	}
)

type mp3Header struct {
	mpeg1      bool
	rate, size int
	mono       bool
}

// parseMP3Header reads a Layer III frame header; ok is false for anything else.
func parseMP3Header(b []byte) (h mp3Header, ok bool) {
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return h, false
	}
	version := (b[1] >> 3) & 3 // 0: MPEG-2.5, 2: MPEG-2, 3: MPEG-1
	layer := (b[1] >> 1) & 3   // 1: Layer III
	bi, ri := b[2]>>4, (b[2]>>2)&3
	if version == 1 || layer != 1 || ri == 3 || bi == 0 || bi == 15 {
		return h, false
	}
	h.mpeg1 = version == 3
	v := map[byte]int{3: 0, 2: 1, 0: 2}[version]
	h.rate = mp3Rates[v][ri]
	br := mp3Bitrates[min(v, 1)][bi] * 1000
	pad := int((b[2] >> 1) & 1)
	if h.mpeg1 {
		h.size = 144*br/h.rate + pad
	} else {
		h.size = 72*br/h.rate + pad
	}
	h.mono = b[3]>>6 == 3
	return h, true
}

func mp3Sync(b []byte) bool {
	_, ok := parseMP3Header(b)
	return ok
}

// id3Size is the size of an ID3v2 tag at the start of b (0 if none).
func id3Size(b []byte) int {
	if len(b) < 10 || string(b[:3]) != "ID3" {
		return 0
	}
	n := int(b[6]&0x7f)<<21 | int(b[7]&0x7f)<<14 | int(b[8]&0x7f)<<7 | int(b[9]&0x7f)
	n += 10
	if b[5]&0x10 != 0 {
		n += 10 // a footer
	}
	return n
}

// scanMP3 walks the frame headers. A last frame cut short is truncation.
func scanMP3(b []byte) (mp3File, error) {
	var m mp3File
	pos := id3Size(b)
	first := true
	for pos+4 <= len(b) {
		h, ok := parseMP3Header(b[pos:])
		if !ok {
			if first {
				return m, corruptf("no MPEG Layer III frame where the MP3 should start (byte %d)", pos)
			}
			rest := b[pos:]
			if bytes.HasPrefix(rest, []byte("TAG")) || bytes.HasPrefix(rest, []byte("APETAGEX")) || bytes.HasPrefix(rest, []byte("LYRICS")) {
				break
			}
			return m, corruptf("corrupt MP3: no frame header at byte %d (after %d frames)", pos, m.frames)
		}
		if h.size < 4 {
			return m, corruptf("corrupt MP3: a frame of %d bytes at byte %d", h.size, pos)
		}
		if pos+h.size > len(b) {
			return m, corruptf("truncated MP3: the frame at byte %d needs %d bytes, %d remain", pos, h.size, len(b)-pos)
		}
		if first {
			m.rate = h.rate
			m.readXing(b[pos:pos+h.size], h)
			first = false
			if m.xing {
				pos += h.size
				continue
			}
		} else if h.rate != m.rate {
			return m, corruptf("MP3 frames at %d Hz, then %d Hz at byte %d", m.rate, h.rate, pos)
		}
		m.frames++
		pos += h.size
	}
	if first {
		return m, corruptf("no MPEG Layer III frame in the file")
	}
	if m.xingFrames > 0 && uint64(m.frames) < m.xingFrames {
		return m, corruptf("truncated MP3: its Xing/Info header gives %d frames, the file holds %d", m.xingFrames, m.frames)
	}
	return m, nil
}

// readXing reads a Xing/Info frame's frame count.
func (m *mp3File) readXing(f []byte, h mp3Header) {
	side := 32 // the side information's size, which the tag follows
	switch {
	case h.mpeg1 && h.mono:
		side = 17
	case !h.mpeg1 && !h.mono:
		side = 17
	case !h.mpeg1:
		side = 9
	}
	p := 4 + side
	if p+8 > len(f) || (string(f[p:p+4]) != "Xing" && string(f[p:p+4]) != "Info") {
		return
	}
	m.xing = true
	if binary.BigEndian.Uint32(f[p+4:])&1 != 0 && p+12 <= len(f) {
		m.xingFrames = uint64(binary.BigEndian.Uint32(f[p+8:]))
	}
}
