//go:build !ffcv_nocodecs

package audio

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// tone is a planar test signal: channel c a sine of its own frequency
// with a little noise, as integers of the given width.
func tone(frames, channels, bits int) []int32 {
	out := make([]int32, frames*channels)
	amp := float64(int64(1)<<(bits-1)) * 0.7
	seed := uint32(1)
	for c := 0; c < channels; c++ {
		for i := 0; i < frames; i++ {
			seed = seed*1664525 + 1013904223
			noise := float64(int32(seed)>>20) / 2048 * 0.05
			out[c*frames+i] = int32(amp * (math.Sin(float64(i)*0.01*float64(c+1)) + noise) / 1.05)
		}
	}
	return out
}

func scaled(ints []int32, bits int) []float32 {
	out := make([]float32, len(ints))
	for i, x := range ints {
		out[i] = float32(x) / float32(uint64(1)<<(bits-1))
	}
	return out
}

func readFloats(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustFLAC(t *testing.T, ints []int32, channels, bits, rate int) []byte {
	t.Helper()
	b, err := EncodeFLAC(ints, channels, bits, rate)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// clips is one clip per codec and layout: its bytes, and, for the
// lossless ones, the samples it must decode to.
func clips(t *testing.T) []struct {
	name  string
	data  []byte
	info  Info
	exact []float32
} {
	const n = 20000
	mono16, st24 := tone(n, 1, 16), tone(n, 2, 24)
	floats := scaled(tone(n, 2, 24), 24)
	wav24 := make([]byte, 0)
	{ // 24-bit PCM WAV, written by hand (WAV writes 16 and 32)
		w := WAV(st24, nil, 2, 32, 16000)
		wav24 = append(wav24, w[:44]...)
		binary.LittleEndian.PutUint16(wav24[34:], 24)
		binary.LittleEndian.PutUint16(wav24[32:], 6)
		binary.LittleEndian.PutUint32(wav24[28:], 16000*6)
		binary.LittleEndian.PutUint32(wav24[40:], n*6)
		binary.LittleEndian.PutUint32(wav24[4:], 36+n*6)
		for i := 0; i < n; i++ {
			for c := 0; c < 2; c++ {
				x := uint32(st24[c*n+i])
				wav24 = append(wav24, byte(x), byte(x>>8), byte(x>>16))
			}
		}
	}
	return []struct {
		name  string
		data  []byte
		info  Info
		exact []float32
	}{
		{"wav16 mono", WAV(mono16, nil, 1, 16, 16000), Info{field.AudioWAV, 16000, 1, 16, n}, scaled(mono16, 16)},
		{"wav24 stereo", wav24, Info{field.AudioWAV, 16000, 2, 24, n}, scaled(st24, 24)},
		{"wav float stereo", WAV(nil, floats, 2, 32, 44100), Info{field.AudioWAV, 44100, 2, 32, n}, floats},
		{"flac16 mono", mustFLAC(t, mono16, 1, 16, 16000), Info{field.AudioFLAC, 16000, 1, 16, n}, scaled(mono16, 16)},
		{"flac24 stereo", mustFLAC(t, st24, 2, 24, 48000), Info{field.AudioFLAC, 48000, 2, 24, n}, scaled(st24, 24)},
		{"mp3 mono", mustRead(t, "testdata/mono16k.mp3"), Info{field.AudioMP3, 16000, 1, 0, 8750}, nil},
		{"opus stereo", mustRead(t, "testdata/stereo16k.opus"), Info{field.AudioOpus, 48000, 2, 0, 8750}, nil},
	}
}

// Every codec: the header, the whole clip (exact for the lossless ones),
// and windows anywhere equal to the slice of the whole clip.
func TestDecode(t *testing.T) {
	for _, tc := range clips(t) {
		t.Run(tc.name, func(t *testing.T) {
			info, err := Probe(tc.data)
			if err != nil || info != tc.info {
				t.Fatalf("Probe = %+v, %v; want %+v", info, err, tc.info)
			}
			pcm, err := DecodeAll(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			whole := pcm.Floats()
			n := int(pcm.Frames)
			if n != int(tc.info.Frames) || len(whole) != n*tc.info.Channels {
				t.Fatalf("decoded %d frames (%d samples), want %d", n, len(whole), tc.info.Frames)
			}
			if tc.exact != nil {
				for i := range whole {
					if whole[i] != tc.exact[i] {
						t.Fatalf("sample %d = %g, want %g", i, whole[i], tc.exact[i])
					}
				}
			}
			// Opus converges after a seek (80 ms of pre-roll) to within float
			// noise of the decode from the start, not bit for bit.
			tol := float32(0)
			if tc.info.Codec == field.AudioOpus {
				tol = 1e-4
			}
			for _, w := range []struct{ start, n int }{{0, 100}, {1234, 777}, {n - 500, 500}, {0, n}, {n/2 + 1, 4097}} {
				stride := w.n + 3
				out := make([]float32, (tc.info.Channels-1)*stride+w.n)
				if err := Window(tc.info.Codec, tc.data, tc.info.Channels, uint64(w.start), w.n, stride, out); err != nil {
					t.Fatalf("window %+v: %v", w, err)
				}
				for c := 0; c < tc.info.Channels; c++ {
					for i := 0; i < w.n; i++ {
						if got, want := out[c*stride+i], whole[c*n+w.start+i]; got != want && !(got-want <= tol && want-got <= tol) {
							t.Fatalf("window %+v: channel %d frame %d = %g, whole clip's %g", w, c, i, got, want)
						}
					}
				}
			}
			// A window past the end is an error, never a short window.
			out := make([]float32, 10*tc.info.Channels)
			err = Window(tc.info.Codec, tc.data, tc.info.Channels, uint64(n-5), 10, 10, out)
			if !errors.Is(err, field.ErrData) || !strings.Contains(err.Error(), "truncated") {
				t.Fatalf("a window past the end: %v", err)
			}
		})
	}
}

// The lossy codecs decode as the references do (kept in testdata): MP3 as
// FFmpeg (by PyAV), Opus as libsndfile (by soundfile), which decodes with
// libopus too (FFmpeg's own Opus decoder differs from libopus on stereo).
func TestLossyMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		file     string
		channels int
	}{{"mono16k.mp3", 1}, {"stereo16k.opus", 2}} {
		pcm, err := DecodeAll(mustRead(t, "testdata/"+tc.file))
		if err != nil {
			t.Fatal(err)
		}
		ref := readFloats(t, "testdata/"+tc.file+".f32")
		m := len(ref) / tc.channels
		got := pcm.Floats()
		for c := 0; c < tc.channels; c++ {
			for i := 0; i < m; i++ {
				if d := math.Abs(float64(got[c*int(pcm.Frames)+i] - ref[c*m+i])); d > 1e-5 {
					t.Fatalf("%s: channel %d frame %d = %g, the reference's %g", tc.file, c, i, got[c*int(pcm.Frames)+i], ref[c*m+i])
				}
			}
		}
	}
}

// Bad input is refused with a reason, never decoded short.
func TestRefused(t *testing.T) {
	ints := tone(20000, 1, 16)
	wav := WAV(ints, nil, 1, 16, 16000)
	flac := mustFLAC(t, ints, 1, 16, 16000)
	mp3 := mustRead(t, "testdata/mono16k.mp3")
	opus := mustRead(t, "testdata/stereo16k.opus")
	// A STREAMINFO that claims 2^31 frames (8 GiB of samples) over a few kilobytes: refused
	// before its decode is allocated.
	huge := append([]byte(nil), flac...)
	v := binary.BigEndian.Uint64(huge[18:])
	binary.BigEndian.PutUint64(huge[18:], v&^(1<<36-1)|1<<31)
	rate0 := append([]byte(nil), wav...)
	binary.LittleEndian.PutUint32(rate0[24:], 0)
	corrupt := append([]byte(nil), flac...)
	corrupt[len(corrupt)/2] ^= 0x5a
	// A frame header overwritten: its frame is lost (MP3 frames carry no
	// checksum, so damage inside one decodes unnoticed).
	corruptMP3 := append([]byte(nil), mp3...)
	at := id3Size(mp3)
	for k := 0; k < 5; k++ {
		h, _ := parseMP3Header(mp3[at:])
		at += h.size
	}
	corruptMP3[at], corruptMP3[at+1] = 0, 0
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"empty", "empty (0 bytes)", nil},
		{"unknown codec", "unknown codec", []byte("this is not a sound file at all")},
		{"ogg vorbis", "not Opus", append([]byte("OggS"), make([]byte, 100)...)},
		{"wav rate 0", "sample rate 0", rate0},
		{"wav truncated", "truncated WAV: its data chunk says 40000 bytes, 29956 follow", wav[:30000]},
		{"wav odd bytes", "truncated WAV", func() []byte {
			b := append([]byte(nil), wav[:44]...)
			binary.LittleEndian.PutUint32(b[40:], 3)
			return append(b, 1, 2, 3)
		}()},
		{"flac truncated", "truncated FLAC: its STREAMINFO gives 20000 frames", flac[:len(flac)*2/3]},
		{"flac corrupt", "corrupt FLAC", corrupt},
		{"flac header only", "truncated FLAC", flac[:200]},
		{"flac header claims too much", "its FLAC header gives 2147483648 frames of 1 channels, more than a", huge},
		{"mp3 cut in a frame", "truncated MP3", mp3[:len(mp3)-100]},
		{"mp3 corrupt", "corrupt MP3: no frame header at byte", corruptMP3},
		{"opus truncated", "Ogg/Opus", opus[:len(opus)/2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeAll(tc.data)
			if !errors.Is(err, field.ErrData) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeAll = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestQuantize(t *testing.T) {
	got := Quantize([]float32{0, 0.5, -0.5, 1, -1, 2, -2, float32(math.NaN()), 1.0 / 65536}, 16)
	want := []int32{0, 16384, -16384, 32767, -32768, 32767, -32768, 0, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Quantize = %v, want %v", got, want)
		}
	}
}
