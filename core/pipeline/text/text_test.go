package text

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

func ptr32(x uint32) *uint32 { return &x }

// textFile writes samples (captions, each with tokens = its word lengths)
// to a file with a TextField with tokens (sot 900, eot 901, pad 0,
// vocabulary 1000), a TextField without, and an IntField.
func textFile(t *testing.T, samples [][]string) *beton.Reader {
	t.Helper()
	descs := []field.Desc{
		{Type: field.Text, Name: "caption", Text: &field.TextArgs{Tokens: true, VocabSize: 1000, SOT: ptr32(900), EOT: ptr32(901)}},
		{Type: field.Text, Name: "plain"},
		{Type: field.Int, Name: "label"},
	}
	path := filepath.Join(t.TempDir(), "text.beton")
	return betontest.Write(t, path, descs, betontest.Encoders(t, descs), beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 1},
		len(samples), func(i int) []field.Value {
			var v field.Value
			for _, c := range samples[i] {
				v.Texts = append(v.Texts, []byte(c))
				v.Tokens = append(v.Tokens, wordLengths(c))
			}
			return []field.Value{v, {Texts: v.Texts}, {Int: int64(i)}}
		})
}

func wordLengths(s string) []uint32 {
	var out []uint32
	for _, w := range strings.Fields(s) {
		out = append(out, uint32(len(w)))
	}
	return out
}

// decode runs ops on field f of sample i at (seed, epoch, position) and
// returns the output as int64s (dtype <i8), int32s (<i4) or bytes.
func decode(t *testing.T, r *beton.Reader, f int, i uint64, seed, epoch, pos uint64, op string) ([]int64, []byte, error) {
	t.Helper()
	p, err := pipeline.Build(r, f, []json.RawMessage{json.RawMessage(op)})
	if err != nil {
		return nil, nil, err
	}
	c := pipeline.NewCtx()
	defer c.Close()
	c.Sample, c.Seed, c.Epoch, c.Pos = i, seed, epoch, pos
	if c.Col, c.Heap, err = r.Read(i, f); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, p.SampleOut.Bytes())
	if err := p.Run(c, &pipeline.Scratch{}, nil, out); err != nil {
		return nil, nil, err
	}
	var ints []int64
	switch p.SampleOut.DType {
	case "<i8":
		for k := 0; k < len(out); k += 8 {
			ints = append(ints, int64(binary.LittleEndian.Uint64(out[k:])))
		}
	case "<i4":
		for k := 0; k < len(out); k += 4 {
			ints = append(ints, int64(int32(binary.LittleEndian.Uint32(out[k:]))))
		}
	}
	return ints, out, nil
}

// Token rows as open_clip's tokenize makes them: start, ids, end, zeros;
// cut to the context with the end token last.
func TestTokensDecoder(t *testing.T) {
	r := textFile(t, [][]string{{"a bb ccc"}, {"one two three four five six seven"}, {""}})
	for _, tc := range []struct {
		name   string
		sample uint64
		op     string
		want   string
	}{
		{"padded", 0, `{"op": "text_tokens", "context_length": 8}`, "[900 1 2 3 901 0 0 0]"},
		{"exactly full", 0, `{"op": "text_tokens", "context_length": 5}`, "[900 1 2 3 901]"},
		{"cut", 1, `{"op": "text_tokens", "context_length": 5}`, "[900 3 3 5 901]"},
		{"context of one", 1, `{"op": "text_tokens", "context_length": 1}`, "[901]"},
		{"empty caption", 2, `{"op": "text_tokens", "context_length": 4}`, "[900 901 0 0]"},
		{"lengths", 0, `{"op": "text_tokens", "context_length": 6, "extra": "lengths"}`, "[900 1 2 3 901 0 5]"},
		{"cut length", 1, `{"op": "text_tokens", "context_length": 4, "extra": "lengths"}`, "[900 3 3 901 4]"},
		{"mask", 0, `{"op": "text_tokens", "context_length": 6, "extra": "mask"}`, "[900 1 2 3 901 0 1 1 1 1 1 0]"},
		{"int32", 0, `{"op": "text_tokens", "context_length": 6, "dtype": "<i4"}`, "[900 1 2 3 901 0]"},
		{"other specials", 0, `{"op": "text_tokens", "context_length": 7, "sot": 7, "eot": 8, "pad": 9}`, "[7 1 2 3 8 9 9]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := decode(t, r, 0, tc.sample, 0, 0, 0, tc.op)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != tc.want {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		f    int
		op   string
		want string
	}{
		{"no tokens stored", 1, `{"op": "text_tokens", "context_length": 8}`, "stores no tokens"},
		{"not text", 2, `{"op": "text_tokens", "context_length": 8}`, "cannot decode a IntField"},
		{"no context", 0, `{"op": "text_tokens"}`, "context_length 0"},
		{"bad dtype", 0, `{"op": "text_tokens", "context_length": 8, "dtype": "<f4"}`, "dtype"},
		{"bad extra", 0, `{"op": "text_tokens", "context_length": 8, "extra": "both"}`, "extra"},
		{"unknown argument", 0, `{"op": "text_tokens", "context_length": 8, "truncate": true}`, "unknown field"},
		{"raw of a number", 2, `{"op": "text_raw", "max_bytes": 8}`, "cannot decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := decode(t, r, tc.f, 0, 0, 0, 0, tc.op); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// The raw text decoder writes the caption's bytes after their length, cut
// at a whole character when it is longer than max_bytes.
func TestRawTextDecoder(t *testing.T) {
	r := textFile(t, [][]string{{"héllo wörld"}})
	for _, tc := range []struct {
		max  int
		want string
	}{
		{20, "héllo wörld"}, {13, "héllo wörld"}, {12, "héllo wörl"}, {10, "héllo wö"}, {9, "héllo w"}, {2, "h"}, {1, "h"}, {0, ""},
	} {
		_, out, err := decode(t, r, 1, 0, 0, 0, 0, fmt.Sprintf(`{"op": "text_raw", "max_bytes": %d}`, tc.max))
		if err != nil {
			t.Fatal(err)
		}
		n := binary.LittleEndian.Uint64(out)
		if got := string(out[8 : 8+n]); got != tc.want || len(out) != 8+tc.max {
			t.Fatalf("max %d: %q (%d bytes out), want %q", tc.max, got, len(out), tc.want)
		}
		for _, b := range out[8+n:] {
			if b != 0 {
				t.Fatalf("max %d: bytes after the text are not zero", tc.max)
			}
		}
	}
}

// One of several captions is drawn per sample and epoch, keyed by (seed,
// epoch, position, key) alone: the same for any worker, different across
// epochs, every caption in turn, and the tokens and raw decoders under one
// key draw the same caption.
func TestCaptionDraw(t *testing.T) {
	caps := []string{"a", "bb bb", "ccc ccc ccc", "dddd dddd dddd dddd", "eeeee eeeee eeeee eeeee eeeee"}
	r := textFile(t, [][]string{caps})
	tokens := `{"op": "text_tokens", "context_length": 8, "key": 3}`
	raw := `{"op": "text_raw", "max_bytes": 40, "key": 3}`
	seen := map[int64]int{}
	for epoch := uint64(0); epoch < 60; epoch++ {
		got, _, err := decode(t, r, 0, 0, 11, epoch, 5, tokens)
		if err != nil {
			t.Fatal(err)
		}
		again, _, _ := decode(t, r, 0, 0, 11, epoch, 5, tokens)
		if fmt.Sprint(got) != fmt.Sprint(again) {
			t.Fatalf("epoch %d: %v, then %v", epoch, got, again)
		}
		_, text, _ := decode(t, r, 1, 0, 11, epoch, 5, raw)
		caption := string(text[8 : 8+binary.LittleEndian.Uint64(text)])
		want := wordLengths(caption)
		if fmt.Sprint(got[1:1+len(want)]) != fmt.Sprint(want) {
			t.Fatalf("epoch %d: tokens %v and raw text %q drew different captions", epoch, got, caption)
		}
		seen[got[1]]++
	}
	if len(seen) != len(caps) {
		t.Fatalf("captions drawn over 60 epochs: %v, want all %d", seen, len(caps))
	}
	// Another position or seed draws on its own.
	differs := false
	for epoch := uint64(0); epoch < 10 && !differs; epoch++ {
		a, _, _ := decode(t, r, 0, 0, 11, epoch, 5, tokens)
		b, _, _ := decode(t, r, 0, 0, 11, epoch, 6, tokens)
		c, _, _ := decode(t, r, 0, 0, 12, epoch, 5, tokens)
		differs = a[1] != b[1] || a[1] != c[1]
	}
	if !differs {
		t.Fatal("the draw ignores the position and the seed")
	}
}

// The decoders refuse bad arguments before they look at their field.
func TestBadArguments(t *testing.T) {
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "text_tokens", Args: map[string]any{"context_length": 0}, Want: "context_length 0 out of range"},
		{Name: "text_tokens", Args: map[string]any{"context_length": 77, "dtype": "<u2"}, Want: "dtype uint16 must be int64 or int32"},
		{Name: "text_tokens", Args: map[string]any{"context_length": 77, "extra": "ids"}, Want: `extra "ids"`},
		{Name: "text_tokens", Args: map[string]any{"context_length": 77, "sot": -1}, Want: "sot -1 out of range"},
		{Name: "text_tokens", Args: map[string]any{"context_length": 77, "dtype": "<i4", "pad": 1 << 31}, Want: "pad 2147483648 out of range"},
		{Name: "text_raw", Args: map[string]any{"max_bytes": -1}, Want: "max_bytes -1 must not be negative"},
	})
}
