package field

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"
)

// Text is TextField: one or more UTF-8 captions per sample, each optionally
// with the token ids the user's tokenizer gave it at write time. Like the
// target types its id lies far from FFCV's, which cannot read it.
const Text Type = 102

// TextArgs are a Text field's descriptor arguments, stored as JSON
// (zero-padded) in the 1024 argument bytes.
type TextArgs struct {
	// Tokens says whether every caption carries its token ids.
	Tokens bool `json:"tokens,omitempty"`
	// VocabSize bounds the ids (0: unknown, ids are only < 2^32).
	VocabSize uint32 `json:"vocab_size,omitempty"`
	// SOT and EOT are the start and end tokens the tokens decoder puts
	// around a caption's stored ids (open_clip's sot/eot); nil: none. Pad
	// fills a row after the end token.
	SOT *uint32 `json:"sot,omitempty"`
	EOT *uint32 `json:"eot,omitempty"`
	Pad uint32  `json:"pad,omitempty"`
	// Tokenizer names the tokenizer that made the ids, for people reading
	// the file (e.g. "open_clip.SimpleTokenizer").
	Tokenizer string `json:"tokenizer,omitempty"`
}

// The Text column, align 8: {ptr u64, size u64, captions u32, max_bytes
// u32, max_tokens u32, 4 zero bytes}. max_bytes and max_tokens are the
// longest caption's lengths in the sample, so a reader sizes its outputs
// from the metadata table alone.
const TextColumnSize = 32

// TextMeta is a Text column, decoded.
type TextMeta struct {
	Ptr, Size           uint64
	Captions            int
	MaxBytes, MaxTokens int
}

// ParseTextMeta decodes a Text column.
func ParseTextMeta(col []byte) TextMeta {
	return TextMeta{
		Ptr: binary.LittleEndian.Uint64(col), Size: binary.LittleEndian.Uint64(col[8:]),
		Captions: int(binary.LittleEndian.Uint32(col[16:])),
		MaxBytes: int(binary.LittleEndian.Uint32(col[20:])), MaxTokens: int(binary.LittleEndian.Uint32(col[24:])),
	}
}

func (d *Desc) textArgs() (TextArgs, error) {
	var a TextArgs
	b := d.Args
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("field %q: TextField arguments: %w", d.Name, err)
	}
	return a, d.checkText(a)
}

func (d *Desc) checkText(a TextArgs) error {
	if !a.Tokens && (a.VocabSize != 0 || a.SOT != nil || a.EOT != nil || a.Pad != 0) {
		return fmt.Errorf("field %q: a TextField without tokens has no vocabulary or special tokens", d.Name)
	}
	for _, t := range []*uint32{a.SOT, a.EOT} {
		if t != nil && a.VocabSize != 0 && *t >= a.VocabSize {
			return fmt.Errorf("field %q: special token %d outside the vocabulary of %d", d.Name, *t, a.VocabSize)
		}
	}
	return nil
}

// setText fills Text from Args, and Args in canonical form (so equal
// fields have equal arguments, as shards need).
func (d *Desc) setText() error {
	a, err := d.textArgs()
	if err != nil {
		return err
	}
	d.Text = &a
	d.Args = make([]byte, ArgsSize)
	return d.marshalText(d.Args)
}

func (d *Desc) marshalText(args []byte) error {
	if d.Text == nil {
		d.Text = &TextArgs{}
	}
	if err := d.checkText(*d.Text); err != nil {
		return err
	}
	b, err := json.Marshal(d.Text)
	if err != nil {
		return err
	}
	if len(b) >= ArgsSize {
		return fmt.Errorf("field %q: TextField arguments too long (%d bytes)", d.Name, len(b))
	}
	copy(args, b)
	return nil
}

// A Text sample's heap: per caption {text_len u32, n_tokens u32}, then
// every caption's token ids (u32), then every caption's UTF-8 bytes.
const textEntry = 8

// Caption is caption i of a stored sample: its UTF-8 bytes and its token
// ids as little-endian u32s (empty for a field without tokens).
type Caption struct {
	Text   []byte
	Tokens []byte
}

// NumTokens is the number of token ids of c.
func (c Caption) NumTokens() int { return len(c.Tokens) / 4 }

// Token returns token id k of c.
func (c Caption) Token(k int) uint32 { return binary.LittleEndian.Uint32(c.Tokens[4*k:]) }

// TextCaption returns caption i of a stored Text sample, its lengths
// checked against the heap bytes.
func TextCaption(m TextMeta, heap []byte, i int) (Caption, error) {
	n := m.Captions
	if i < 0 || i >= n {
		return Caption{}, fmt.Errorf("%w: caption %d of %d", ErrData, i, n)
	}
	if uint64(n) > uint64(len(heap))/textEntry {
		return Caption{}, fmt.Errorf("%w: %d captions in %d heap bytes", ErrData, n, len(heap))
	}
	var tokOff, textOff, tokTotal uint64
	for k := 0; k < n; k++ {
		tl := uint64(binary.LittleEndian.Uint32(heap[k*textEntry:]))
		nt := uint64(binary.LittleEndian.Uint32(heap[k*textEntry+4:]))
		if k < i {
			textOff += tl
			tokOff += nt
		}
		tokTotal += nt
	}
	base := uint64(n) * textEntry
	tl := uint64(binary.LittleEndian.Uint32(heap[i*textEntry:]))
	nt := uint64(binary.LittleEndian.Uint32(heap[i*textEntry+4:]))
	texts := base + 4*tokTotal
	if texts > uint64(len(heap)) || texts+textOff+tl > uint64(len(heap)) {
		return Caption{}, fmt.Errorf("%w: caption %d lies past the sample's %d heap bytes", ErrData, i, len(heap))
	}
	return Caption{
		Tokens: heap[base+4*tokOff : base+4*(tokOff+nt)],
		Text:   heap[texts+textOff : texts+textOff+tl],
	}, nil
}

// CheckText checks a whole stored Text sample in one pass: at least one
// caption, the lengths adding up to the heap bytes exactly, the column's
// longest-caption lengths the heap's, every caption valid UTF-8.
func CheckText(m TextMeta, heap []byte) error {
	n := m.Captions
	if n < 1 {
		return fmt.Errorf("%w: no caption", ErrData)
	}
	if uint64(n) > uint64(len(heap))/textEntry {
		return fmt.Errorf("%w: %d captions in %d heap bytes", ErrData, n, len(heap))
	}
	base := uint64(n) * textEntry
	total, tokTotal := base, uint64(0)
	maxBytes, maxTokens := uint64(0), uint64(0)
	for k := 0; k < n; k++ {
		tl := uint64(binary.LittleEndian.Uint32(heap[k*textEntry:]))
		nt := uint64(binary.LittleEndian.Uint32(heap[k*textEntry+4:]))
		total += tl + 4*nt
		tokTotal += nt
		maxBytes, maxTokens = max(maxBytes, tl), max(maxTokens, nt)
	}
	if total != uint64(len(heap)) {
		return fmt.Errorf("%w: the captions' lengths add up to %d bytes, the sample has %d", ErrData, total, len(heap))
	}
	if maxBytes != uint64(m.MaxBytes) || maxTokens != uint64(m.MaxTokens) {
		return fmt.Errorf("%w: the longest caption has %d bytes and %d tokens, the column says %d and %d",
			ErrData, maxBytes, maxTokens, m.MaxBytes, m.MaxTokens)
	}
	text := base + 4*tokTotal // total == len(heap) bounds every caption below
	for k := 0; k < n; k++ {
		tl := uint64(binary.LittleEndian.Uint32(heap[k*textEntry:]))
		if !utf8.Valid(heap[text : text+tl]) {
			return fmt.Errorf("%w: caption %d is not valid UTF-8", ErrData, k)
		}
		text += tl
	}
	return nil
}

// NewTextEncoder returns the encoder of a Text field. Values carry their
// captions in Value.Texts and, for a field with tokens, each caption's ids
// in Value.Tokens.
func NewTextEncoder(d Desc) (Encoder, error) {
	a := TextArgs{}
	if d.Text != nil {
		a = *d.Text
	}
	if err := d.checkText(a); err != nil {
		return nil, err
	}
	return textEncoder{name: d.Name, args: a}, nil
}

type textEncoder struct {
	name string
	args TextArgs
}

func (e textEncoder) Encode(v Value, _ uint64) (Encoded, error) {
	n := len(v.Texts)
	if n == 0 {
		return Encoded{}, fmt.Errorf("%w: no caption (a TextField sample needs at least one)", ErrData)
	}
	if e.args.Tokens && len(v.Tokens) != n {
		return Encoded{}, fmt.Errorf("%w: %d captions and %d token lists", ErrData, n, len(v.Tokens))
	}
	if !e.args.Tokens && len(v.Tokens) != 0 {
		return Encoded{}, fmt.Errorf("%w: tokens given to a TextField that stores none (give it a tokenizer)", ErrData)
	}
	size := uint64(n) * textEntry
	maxBytes, maxTokens := 0, 0
	for i, t := range v.Texts {
		if !utf8.Valid(t) {
			return Encoded{}, fmt.Errorf("%w: caption %d is not valid UTF-8", ErrData, i)
		}
		if len(t) > math.MaxUint32 {
			return Encoded{}, fmt.Errorf("%w: caption %d has %d bytes", ErrData, i, len(t))
		}
		size += uint64(len(t))
		maxBytes = max(maxBytes, len(t))
		if e.args.Tokens {
			for _, id := range v.Tokens[i] {
				if e.args.VocabSize != 0 && id >= e.args.VocabSize {
					return Encoded{}, fmt.Errorf("%w: caption %d has token %d, outside the vocabulary of %d", ErrData, i, id, e.args.VocabSize)
				}
			}
			size += 4 * uint64(len(v.Tokens[i]))
			maxTokens = max(maxTokens, len(v.Tokens[i]))
		}
	}
	heap := make([]byte, size)
	p := n * textEntry
	for i, t := range v.Texts {
		binary.LittleEndian.PutUint32(heap[i*textEntry:], uint32(len(t)))
		if e.args.Tokens {
			binary.LittleEndian.PutUint32(heap[i*textEntry+4:], uint32(len(v.Tokens[i])))
			for _, id := range v.Tokens[i] {
				binary.LittleEndian.PutUint32(heap[p:], id)
				p += 4
			}
		}
	}
	for _, t := range v.Texts {
		p += copy(heap[p:], t)
	}
	col := make([]byte, TextColumnSize)
	binary.LittleEndian.PutUint64(col[8:], size)
	binary.LittleEndian.PutUint32(col[16:], uint32(n))
	binary.LittleEndian.PutUint32(col[20:], uint32(min(maxBytes, math.MaxUint32)))
	binary.LittleEndian.PutUint32(col[24:], uint32(maxTokens))
	return Encoded{Column: col, Heap: heap, HasHeap: true}, nil
}
