package jpeg

import (
	"bytes"
	"fmt"
	"image"
	"math/rand/v2"
	"testing"
)

// entropyBounds returns where the entropy-coded data of a single-scan file
// starts (after the SOS header) and ends (at EOI).
func entropyBounds(t *testing.T, b []byte) (start, end int) {
	t.Helper()
	sos := bytes.Index(b, []byte{0xFF, 0xDA})
	if sos < 0 || !bytes.HasSuffix(b, []byte{0xFF, 0xD9}) {
		t.Fatal("test file has no SOS or EOI")
	}
	return sos + 2 + (int(b[sos+2])<<8 | int(b[sos+3])), len(b) - 2
}

func with(b []byte, at int, patch ...byte) []byte {
	c := append([]byte(nil), b...)
	copy(c[at:], patch)
	return c
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// TestCorruptInput feeds damaged files that every decode path must reject:
// truncations anywhere (including a missing EOI), markers inside the
// entropy-coded data, random bytes, broken headers.
func TestCorruptInput(t *testing.T) {
	const w, h = 200, 150
	enc := encodeT(t, gradient(w, h), w, h, 90, encodeOptions{subsample: true})
	start, end := entropyBounds(t, enc)
	mid := (start + end) / 2
	rng := rand.New(rand.NewPCG(5, 6))
	sof := bytes.Index(enc, []byte{0xFF, 0xC0})

	cases := map[string][]byte{
		"empty":                  {},
		"random bytes":           randBytes(rng, 1000),
		"SOI then random":        append([]byte{0xFF, 0xD8}, randBytes(rng, 1000)...),
		"header only":            enc[:start],
		"random entropy data":    append(append(enc[:start:start], randBytes(rng, end-start)...), 0xFF, 0xD9),
		"DHT marker in data":     with(enc, mid, 0xFF, 0xC4),
		"RST marker in data":     with(enc, mid, 0xFF, 0xD3),
		"EOI early":              with(enc, mid, 0xFF, 0xD9),
		"zero width":             with(enc, sof+7, 0, 0),
		"bad component count":    with(enc, sof+9, 7),
		"bad sampling factors":   with(enc, sof+11, 0x55),
		"no SOI":                 enc[2:],
		"truncated: missing EOI": enc[:len(enc)-2],
		"truncated: half EOI":    enc[:len(enc)-1],
	}
	for _, n := range []int{1, 2, 3, 20, 100, start - 1, start, start + 1, mid, end - 1} {
		cases[fmt.Sprintf("truncated at %d", n)] = enc[:n]
	}
	d := NewDecoder()
	defer d.Close()
	dst := make([]byte, w*h*3)
	for name, b := range cases {
		if _, _, err := d.Decode(b, dst); err == nil {
			t.Errorf("%s: Decode succeeded", name)
		}
		if err := d.DecodeCropResize(b, image.Rect(0, 0, w, h), 50, 40, dst); err == nil {
			t.Errorf("%s: DecodeCropResize of the whole image succeeded", name)
		}
		if err := d.DecodeCropResize(b, image.Rect(0, 0, w, h), 224, 224, dst); err == nil {
			t.Errorf("%s: DecodeCropResize 224x224 succeeded", name)
		}
		whole := image.Rect(0, 0, w, h)
		if err := d.DecodeViews(b, []View{{whole, 50, 40, dst, false}, {whole, 224, 224, dst, true}}); err == nil {
			t.Errorf("%s: DecodeViews of the whole image succeeded", name)
		}
		if err := d.Verify(b); err == nil {
			t.Errorf("%s: Verify succeeded", name)
		}
		if _, err := d.Transcode(b, 90, false); err == nil {
			t.Errorf("%s: Transcode succeeded", name)
		}
		_, _, _ = d.DecodeConfig(b) // may succeed if the header is intact; must not crash
	}
	// After all that, the decoder still works.
	if _, _, err := d.Decode(enc, dst); err != nil {
		t.Fatal(err)
	}
}

// Truncation strictly below the decoded rows does not matter to
// DecodeCropResize: it stops early and its pixels are the correct ones.
// Crops that reach the missing part fail.
func TestTruncatedBelowCrop(t *testing.T) {
	const w, h = 200, 150
	enc := encodeT(t, gradient(w, h), w, h, 90, encodeOptions{subsample: true})
	start, end := entropyBounds(t, enc)
	cut := enc[:start+(end-start)*7/10]
	d := NewDecoder()
	defer d.Close()
	top := image.Rect(10, 0, 190, 16)
	want := make([]byte, 90*8*3)
	got := make([]byte, len(want))
	if err := d.DecodeCropResize(enc, top, 90, 8, want); err != nil {
		t.Fatal(err)
	}
	if err := d.DecodeCropResize(cut, top, 90, 8, got); err != nil {
		t.Fatalf("top crop of a file cut at 70%%: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Error("top crop of a truncated file differs from the intact file")
	}
	if err := d.DecodeCropResize(cut, image.Rect(10, 120, 190, 150), 90, 15, got); err == nil {
		t.Error("bottom crop of a file cut at 70%: no error")
	}
}

// Flipped bits inside the entropy-coded data are often undetectable: JPEG
// has no checksum, a flipped magnitude bit only changes one coefficient, and
// Huffman decoding resynchronises by itself. So the requirement is: never
// crash, report an error whenever libjpeg notices (desync running into the
// marker, leftover bytes, bad codes), and otherwise produce a full image.
// The detection rate is logged for information (about a third here).
func TestCorruptEntropyFlips(t *testing.T) {
	const w, h = 200, 150
	enc := encodeT(t, gradient(w, h), w, h, 90, encodeOptions{subsample: true})
	start, end := entropyBounds(t, enc)
	d := NewDecoder()
	defer d.Close()
	dst := make([]byte, w*h*3)
	step := 5
	if testing.Short() {
		step = 50
	}
	var total, detected int
	for i := start; i < end; i += step {
		for _, x := range []byte{0x01, 0x10, 0x80, 0xFF} {
			b := with(enc, i, enc[i]^x)
			total++
			_, _, err := d.Decode(b, dst)
			if err != nil {
				detected++
			}
			// The whole-image crop reads the same data, so it must agree.
			err2 := d.DecodeCropResize(b, image.Rect(0, 0, w, h), 64, 48, dst)
			if (err == nil) != (err2 == nil) {
				t.Errorf("flip %#x at %d: Decode error %v, DecodeCropResize error %v", x, i, err, err2)
			}
			_ = d.DecodeCropResize(b, image.Rect(50, 40, 120, 110), 30, 30, dst)
		}
	}
	t.Logf("%d of %d single-byte corruptions detected", detected, total)
	if detected == 0 {
		t.Error("no corruption detected at all")
	}
}

// A progressive file must be buffered whole; one whose header claims
// 60000x60000 pixels must fail at once (libjpeg's memory limit) instead of
// allocating gigabytes. A baseline one fails on its missing data.
func TestHugeDimensions(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	for _, o := range []encodeOptions{{subsample: true, progressive: true}, {subsample: true}} {
		enc := encodeT(t, gradient(64, 48), 64, 48, 90, o)
		sof := bytes.Index(enc, []byte{0xFF, 0xC2}) // progressive SOF
		if !o.progressive {
			sof = bytes.Index(enc, []byte{0xFF, 0xC0})
		}
		b := with(enc, sof+5, 0xEA, 0x60, 0xEA, 0x60)
		if w, h, err := d.DecodeConfig(b); err != nil || w != 60000 || h != 60000 {
			t.Fatalf("patched header: %d, %d, %v", w, h, err)
		}
		err := d.DecodeCropResize(b, image.Rect(0, 0, 100, 100), 10, 10, make([]byte, 300))
		if err == nil {
			t.Errorf("progressive=%v: no error", o.progressive)
		}
		t.Logf("progressive=%v: %v", o.progressive, err)
	}
}
