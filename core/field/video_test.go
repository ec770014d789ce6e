package field

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// Frames round-trip through the frame table, and a table that points
// outside its allocation is an error, never a bad slice.
func TestVideoFrames(t *testing.T) {
	frames := [][]byte{[]byte("first"), {}, []byte("third frame")}
	heap, err := PackFrames(frames)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range frames {
		got, err := VideoFrame(heap, len(frames), k)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("frame %d = %q, %v; want %q", k, got, err, want)
		}
	}
	corrupt := func(at int, v uint32) []byte {
		b := append([]byte(nil), heap...)
		binary.LittleEndian.PutUint32(b[at:], v)
		return b
	}
	for _, tc := range []struct {
		name   string
		heap   []byte
		frames int
		k      int
	}{
		{"past the end", corrupt(12, uint32(len(heap)+1)), 3, 2},
		{"inside the table", corrupt(0, 4), 3, 0},
		{"backwards", corrupt(4, 2), 3, 0},
		{"shorter than its table", heap[:8], 3, 0},
		{"more frames than the table", heap, 50, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := VideoFrame(tc.heap, tc.frames, tc.k); !errors.Is(err, ErrData) {
				t.Fatalf("err = %v, want ErrData", err)
			}
		})
	}
	if _, err := VideoFrame(heap, 3, 3); err == nil {
		t.Fatal("frame 3 of 3 read")
	}
}

// The column and the descriptor round-trip; FFCV's readers know neither.
func TestVideoColumnAndDescriptor(t *testing.T) {
	m := VideoMeta{Ptr: 1 << 40, Size: 12345, FPS: 29.97, Frames: 300, Width: 320, Height: 240}
	col := m.Column()
	if len(col) != VideoColumnSize {
		t.Fatalf("column of %d bytes", len(col))
	}
	if got := ParseVideoMeta(col); got != m {
		t.Fatalf("column round trip: %+v, want %+v", got, m)
	}
	if c, err := ColumnOf(Video); err != nil || c != (Column{VideoColumnSize, 8}) {
		t.Fatalf("ColumnOf(Video) = %v, %v", c, err)
	}
	b, err := (&Desc{Type: Video, Name: "video"}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDesc(b)
	if err != nil || d.Type != Video || d.Name != "video" || !bytes.HasPrefix(d.Args, []byte(`{"encoding":"jpeg"}`)) {
		t.Fatalf("descriptor round trip: %+v, %v", d, err)
	}
	b[1+NameSize+14] = 'x' // {"encoding":"xpeg"}
	if _, err := ParseDesc(b); err == nil {
		t.Fatal("unknown encoding accepted")
	}
	for _, tc := range []struct {
		name string
		m    VideoMeta
	}{
		{"no frames", VideoMeta{Frames: 0, Width: 4, Height: 4}},
		{"empty frames", VideoMeta{Frames: 2, Width: 0, Height: 4}},
		{"negative fps", VideoMeta{Frames: 2, Width: 4, Height: 4, FPS: -1}},
		{"unknown encoding", VideoMeta{Frames: 2, Width: 4, Height: 4, Encoding: 7}},
	} {
		if err := CheckVideo(tc.m); !errors.Is(err, ErrData) {
			t.Errorf("%s: err = %v, want ErrData", tc.name, err)
		}
	}
}
