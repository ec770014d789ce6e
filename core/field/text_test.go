package field

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

func u32(x uint32) *uint32 { return &x }

// Captions and their tokens round-trip through the encoder and
// TextCaption; the column carries the counts a reader sizes outputs by.
func TestTextRoundTrip(t *testing.T) {
	withTokens := TextArgs{Tokens: true, VocabSize: 1000, SOT: u32(998), EOT: u32(999)}
	for _, tc := range []struct {
		name   string
		args   TextArgs
		texts  []string
		tokens [][]uint32
	}{
		{"one caption", TextArgs{}, []string{"a red house"}, nil},
		{"five captions", TextArgs{}, []string{"one", "", "three words here", "ünïcödé ✓", "five"}, nil},
		{"tokens", withTokens, []string{"a dog", "two dogs on grass"}, [][]uint32{{5, 6}, {7, 8, 9, 10}}},
		{"empty tokens", withTokens, []string{""}, [][]uint32{{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Desc{Type: Text, Name: "caption", Text: &tc.args}
			enc, err := NewEncoder(d)
			if err != nil {
				t.Fatal(err)
			}
			v := Value{Tokens: tc.tokens}
			for _, s := range tc.texts {
				v.Texts = append(v.Texts, []byte(s))
			}
			e, err := enc.Encode(v, 0)
			if err != nil {
				t.Fatal(err)
			}
			m := ParseTextMeta(e.Column)
			if m.Captions != len(tc.texts) || m.Size != uint64(len(e.Heap)) {
				t.Fatalf("column %+v for %d captions, %d heap bytes", m, len(tc.texts), len(e.Heap))
			}
			maxBytes, maxTokens := 0, 0
			for i, s := range tc.texts {
				c, err := TextCaption(m, e.Heap, i)
				if err != nil {
					t.Fatal(err)
				}
				if string(c.Text) != s {
					t.Errorf("caption %d: %q, want %q", i, c.Text, s)
				}
				var toks []uint32
				for k := 0; k < c.NumTokens(); k++ {
					toks = append(toks, c.Token(k))
				}
				if tc.tokens != nil && !equalU32(toks, tc.tokens[i]) {
					t.Errorf("caption %d: tokens %v, want %v", i, toks, tc.tokens[i])
				}
				maxBytes = max(maxBytes, len(s))
				if tc.tokens != nil {
					maxTokens = max(maxTokens, len(tc.tokens[i]))
				}
			}
			if m.MaxBytes != maxBytes || m.MaxTokens != maxTokens {
				t.Errorf("max bytes %d, tokens %d; want %d, %d", m.MaxBytes, m.MaxTokens, maxBytes, maxTokens)
			}
			if _, err := TextCaption(m, e.Heap, len(tc.texts)); !errors.Is(err, ErrData) {
				t.Errorf("caption past the last: %v", err)
			}
		})
	}
}

func equalU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Values a TextField cannot store are data errors, never garbage.
func TestTextEncoderRefuses(t *testing.T) {
	plain := TextArgs{}
	toks := TextArgs{Tokens: true, VocabSize: 10}
	for _, tc := range []struct {
		name string
		args TextArgs
		v    Value
	}{
		{"no caption", plain, Value{}},
		{"invalid UTF-8", plain, Value{Texts: [][]byte{{0xff, 0xfe}}}},
		{"tokens without a tokenizer", plain, Value{Texts: [][]byte{[]byte("a")}, Tokens: [][]uint32{{1}}}},
		{"missing tokens", toks, Value{Texts: [][]byte{[]byte("a"), []byte("b")}, Tokens: [][]uint32{{1}}}},
		{"token outside the vocabulary", toks, Value{Texts: [][]byte{[]byte("a")}, Tokens: [][]uint32{{10}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := NewEncoder(Desc{Type: Text, Name: "caption", Text: &tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := enc.Encode(tc.v, 0); !errors.Is(err, ErrData) {
				t.Fatalf("err = %v, want ErrData", err)
			}
		})
	}
}

// A TextField descriptor round-trips; inconsistent arguments are refused
// when written and when read.
func TestTextDescriptor(t *testing.T) {
	d := Desc{Type: Text, Name: "caption", Text: &TextArgs{Tokens: true, VocabSize: 49408, SOT: u32(49406), EOT: u32(49407), Tokenizer: "open_clip.SimpleTokenizer"}}
	b, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseDesc(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != Text || got.Name != "caption" || got.Text == nil || *got.Text.SOT != 49406 || *got.Text.EOT != 49407 ||
		got.Text.VocabSize != 49408 || !got.Text.Tokens || got.Text.Tokenizer != "open_clip.SimpleTokenizer" {
		t.Fatalf("parsed %+v (%+v)", got, got.Text)
	}
	if c, err := ColumnOf(Text); err != nil || c != (Column{TextColumnSize, 8}) {
		t.Fatalf("column %+v, %v", c, err)
	}
	for _, tc := range []struct {
		name string
		args string
	}{
		{"not JSON", `{"tokens": tru`},
		{"unknown key", `{"tokens": true, "bpe": 1}`},
		{"special token outside the vocabulary", `{"tokens": true, "vocab_size": 10, "eot": 10}`},
		{"special tokens without tokens", `{"sot": 1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := make([]byte, DescriptorSize)
			raw[0] = byte(Text)
			copy(raw[1:], "caption")
			copy(raw[1+NameSize:], tc.args)
			if _, err := ParseDesc(raw); err == nil {
				t.Fatal("parsed")
			}
		})
	}
	bad := Desc{Type: Text, Name: "caption", Text: &TextArgs{EOT: u32(3)}}
	if _, err := bad.MarshalBinary(); err == nil {
		t.Fatal("marshalled special tokens without tokens")
	}
}

// Heap bytes that do not hold what the column says are data errors.
func TestTextCaptionCorrupt(t *testing.T) {
	enc, _ := NewEncoder(Desc{Type: Text, Name: "caption"})
	e, err := enc.Encode(Value{Texts: [][]byte{[]byte("hello"), []byte("world")}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := ParseTextMeta(e.Column)
	long := bytes.Clone(e.Heap)
	binary.LittleEndian.PutUint32(long[8:], 1<<30) // caption 1's length past the end
	many := m
	many.Captions = 1 << 28
	if err := CheckText(m, e.Heap); err != nil {
		t.Fatalf("a good sample: %v", err)
	}
	badUTF8 := bytes.Clone(e.Heap)
	badUTF8[len(badUTF8)-1] = 0xff
	none := m
	none.Captions = 0
	for name, c := range map[string]struct {
		m    TextMeta
		heap []byte
	}{"truncated": {m, e.Heap[:len(e.Heap)-1]}, "longer": {m, append(bytes.Clone(e.Heap), 'x')},
		"invalid UTF-8": {m, badUTF8}, "no caption": {none, e.Heap}, "length past the end": {m, long}} {
		if err := CheckText(c.m, c.heap); !errors.Is(err, ErrData) {
			t.Errorf("%s: CheckText = %v, want ErrData", name, err)
		}
	}
	for _, tc := range []struct {
		name string
		m    TextMeta
		heap []byte
		i    int
	}{
		{"truncated", m, e.Heap[:12], 1},
		{"length past the end", m, long, 1},
		{"more captions than bytes", many, e.Heap, 0},
		{"negative index", m, e.Heap, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := TextCaption(tc.m, tc.heap, tc.i); !errors.Is(err, ErrData) {
				t.Fatalf("err = %v, want ErrData", err)
			}
		})
	}
}

// CheckText is linear in the captions: a sample of a quarter million
// empty captions is checked in well under a second, not in minutes.
func TestCheckTextLinear(t *testing.T) {
	const n = 1 << 18
	heap := make([]byte, n*textEntry)
	m := TextMeta{Size: uint64(len(heap)), Captions: n}
	start := time.Now()
	if err := CheckText(m, heap); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("%d captions checked in %v", n, d)
	}
}

// The column's longest-caption lengths, which readers size outputs by,
// must be the heap's.
func TestCheckTextMaxima(t *testing.T) {
	enc, _ := NewEncoder(Desc{Type: Text, Name: "caption", Text: &TextArgs{Tokens: true}})
	e, err := enc.Encode(Value{Texts: [][]byte{[]byte("hello"), []byte("hi")}, Tokens: [][]uint32{{1, 2}, {3}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := ParseTextMeta(e.Column)
	if err := CheckText(m, e.Heap); err != nil {
		t.Fatal(err)
	}
	short, few := m, m
	short.MaxBytes, few.MaxTokens = 4, 1
	for _, bad := range []TextMeta{short, few} {
		if err := CheckText(bad, e.Heap); !errors.Is(err, ErrData) {
			t.Errorf("max bytes %d, tokens %d: CheckText = %v, want ErrData", bad.MaxBytes, bad.MaxTokens, err)
		}
	}
}
