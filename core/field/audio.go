package field

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Audio is AudioField: one clip of sound per sample, stored as FLAC or as
// the source file's own bytes (WAV, FLAC, MP3, Ogg/Opus). Its type id lies
// beside Video's; FFCV cannot read it.
const Audio Type = 104

// AudioArgs are an Audio field's descriptor arguments, stored as JSON
// (zero-padded) in the 1024 argument bytes.
type AudioArgs struct {
	// Storage: "flac" (every value encoded as FLAC at write) or "source"
	// (files kept as they are; arrays stored as WAV).
	Storage string `json:"storage"`
}

// The codec of one stored clip (the column's codec byte). 0 is no codec,
// so an all-zero column is refused.
const (
	AudioFLAC byte = 1
	AudioWAV  byte = 2
	AudioMP3  byte = 3
	AudioOpus byte = 4
)

// AudioCodecName is the name of a codec byte, for messages.
func AudioCodecName(c byte) string {
	switch c {
	case AudioFLAC:
		return "FLAC"
	case AudioWAV:
		return "WAV"
	case AudioMP3:
		return "MP3"
	case AudioOpus:
		return "Ogg/Opus"
	}
	return fmt.Sprintf("codec %d", c)
}

// The Audio column, align 8: {ptr u64, size u64, frames u64, sample_rate
// u32, channels u16, codec u8, bits u8}. frames is the clip's length in
// samples per channel, as its decode gives it (the writer decodes every
// clip whole once and stores the count it got); bits is the stored
// integer sample width (FLAC, PCM WAV), 32 for float WAV, 0 for MP3 and
// Opus.
const AudioColumnSize = 32

// AudioMeta is an Audio column, decoded.
type AudioMeta struct {
	Ptr, Size  uint64
	Frames     uint64
	SampleRate int
	Channels   int
	Codec      byte
	Bits       int
}

// ParseAudioMeta decodes an Audio column.
func ParseAudioMeta(col []byte) AudioMeta {
	return AudioMeta{
		Ptr: binary.LittleEndian.Uint64(col), Size: binary.LittleEndian.Uint64(col[8:]),
		Frames:     binary.LittleEndian.Uint64(col[16:]),
		SampleRate: int(binary.LittleEndian.Uint32(col[24:])),
		Channels:   int(binary.LittleEndian.Uint16(col[28:])),
		Codec:      col[30], Bits: int(col[31]),
	}
}

// Column encodes m (its Ptr left for the writer to fill).
func (m AudioMeta) Column() []byte {
	col := make([]byte, AudioColumnSize)
	binary.LittleEndian.PutUint64(col, m.Ptr)
	binary.LittleEndian.PutUint64(col[8:], m.Size)
	binary.LittleEndian.PutUint64(col[16:], m.Frames)
	binary.LittleEndian.PutUint32(col[24:], uint32(m.SampleRate))
	binary.LittleEndian.PutUint16(col[28:], uint16(m.Channels))
	col[30] = m.Codec
	col[31] = byte(m.Bits)
	return col
}

// MaxAudioChannels bounds a clip's channels (FLAC's limit).
const MaxAudioChannels = 8

// CheckAudio checks an Audio column against the field's limits; the
// stored bytes are checked as they are decoded.
func CheckAudio(m AudioMeta) error {
	switch {
	case m.Codec < AudioFLAC || m.Codec > AudioOpus:
		return fmt.Errorf("%w: unknown audio codec %d", ErrData, m.Codec)
	case m.SampleRate < 1:
		return fmt.Errorf("%w: audio sample rate %d", ErrData, m.SampleRate)
	case m.Channels < 1 || m.Channels > MaxAudioChannels:
		return fmt.Errorf("%w: audio of %d channels (1 to %d)", ErrData, m.Channels, MaxAudioChannels)
	case m.Frames < 1 || m.Frames > 1<<40:
		return fmt.Errorf("%w: audio of %d frames", ErrData, m.Frames)
	}
	return nil
}

func (d *Desc) audioArgs() error {
	b := d.Args
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	var a AudioArgs
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("field %q: %v arguments: %w", d.Name, d.Type, err)
	}
	if a.Storage != "flac" && a.Storage != "source" {
		return fmt.Errorf("field %q: audio storage %q (want flac or source)", d.Name, a.Storage)
	}
	d.Audio = &a
	d.Args = make([]byte, ArgsSize)
	return marshalAudio(d.Args, a)
}

func marshalAudio(args []byte, a AudioArgs) error {
	if a.Storage == "" {
		a.Storage = "flac"
	}
	if a.Storage != "flac" && a.Storage != "source" {
		return fmt.Errorf("audio storage %q (want flac or source)", a.Storage)
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	copy(args, b)
	return nil
}
