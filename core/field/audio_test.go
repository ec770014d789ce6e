package field

import (
	"errors"
	"strings"
	"testing"
)

func TestAudioDescriptor(t *testing.T) {
	for _, storage := range []string{"", "flac", "source"} {
		d := Desc{Type: Audio, Name: "audio", Audio: &AudioArgs{Storage: storage}}
		b, err := d.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseDesc(b)
		want := storage
		if want == "" {
			want = "flac"
		}
		if err != nil || got.Type != Audio || got.Audio == nil || got.Audio.Storage != want {
			t.Fatalf("%q: %+v, %v", storage, got, err)
		}
		if c, _ := ColumnOf(Audio); c != (Column{AudioColumnSize, 8}) {
			t.Fatal(c)
		}
	}
	if _, err := (&Desc{Type: Audio, Name: "a", Audio: &AudioArgs{Storage: "ogg"}}).MarshalBinary(); err == nil ||
		!strings.Contains(err.Error(), `audio storage "ogg"`) {
		t.Fatal(err)
	}
}

func TestAudioColumn(t *testing.T) {
	m := AudioMeta{Ptr: 1 << 40, Size: 12345, Frames: 1 << 33, SampleRate: 48000, Channels: 2, Codec: AudioOpus}
	if got := ParseAudioMeta(m.Column()); got != m || len(m.Column()) != AudioColumnSize {
		t.Fatalf("%+v", got)
	}
	good := AudioMeta{Frames: 10, SampleRate: 16000, Channels: 1, Codec: AudioFLAC, Bits: 16}
	if err := CheckAudio(good); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*AudioMeta)
		want string
	}{
		{func(m *AudioMeta) { m.Codec = 0 }, "unknown audio codec 0"},
		{func(m *AudioMeta) { m.Codec = 9 }, "unknown audio codec 9"},
		{func(m *AudioMeta) { m.SampleRate = 0 }, "sample rate 0"},
		{func(m *AudioMeta) { m.Channels = 9 }, "9 channels"},
		{func(m *AudioMeta) { m.Frames = 0 }, "0 frames"},
	} {
		m := good
		tc.edit(&m)
		if err := CheckAudio(m); !errors.Is(err, ErrData) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%+v: %v, want %q", m, err, tc.want)
		}
	}
}
