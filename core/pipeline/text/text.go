// Package text decodes TextField captions: token rows as open_clip's
// tokenize makes them, or raw UTF-8, one caption drawn per sample and
// epoch.
package text

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// Caption decoders of a TextField. A sample with several captions (COCO
// has five) gives one per epoch, drawn with the op's randomness key, so
// the draw depends on (seed, epoch, position, key) only.

func init() {
	pipeline.RegisterDecoder("text_tokens", newTokensDecoder)
	pipeline.RegisterDecoder("text_raw", newRawTextDecoder)
}

// drawCaption picks the sample's caption for this epoch.
func drawCaption(c *pipeline.Ctx, op int) (field.Caption, error) {
	m := field.ParseTextMeta(c.Col)
	i := 0
	if m.Captions > 1 {
		i = c.Rand(op).IntN(m.Captions)
	}
	return field.TextCaption(m, c.Heap, i)
}

// tokensDecoder writes a caption's stored token ids as open_clip's
// tokenize does: [sot] + ids + [eot], cut to context_length with the last
// kept position made eot, then pad. After the row come, as asked, the
// length (tokens before the padding) or the attention mask (1 for them,
// then 0), in the row's dtype.
type tokensDecoder struct {
	ctx      int
	sot, eot *uint32
	pad      uint32
	extra    string // "", "lengths" or "mask"
	item     int    // 4 or 8 bytes per value
}

func newTokensDecoder(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		ContextLength int    `json:"context_length"`
		SOT           *int64 `json:"sot"`
		EOT           *int64 `json:"eot"`
		Pad           *int64 `json:"pad"`
		Extra         string `json:"extra"`
		DType         string `json:"dtype"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.ContextLength < 1 || a.ContextLength > 1<<20 {
		return nil, fmt.Errorf("context_length %d out of range [1, 2^20]", a.ContextLength)
	}
	item := 8
	switch a.DType {
	case "", "<i8":
	case "<i4":
		item = 4
	default:
		return nil, fmt.Errorf("dtype %s must be int64 or int32", field.DTypeName(a.DType))
	}
	switch a.Extra {
	case "", "lengths", "mask":
	default:
		return nil, fmt.Errorf("extra %q must be '', 'lengths' or 'mask'", a.Extra)
	}
	limit := int64(1)<<(8*item-1) - 1
	var ids [3]*uint32 // sot, eot, pad as given
	for i, x := range []*int64{a.SOT, a.EOT, a.Pad} {
		if x == nil {
			continue
		}
		if *x < 0 || *x > 0xffffffff || *x > limit {
			return nil, fmt.Errorf("%s %d out of range", [3]string{"sot", "eot", "pad"}[i], *x)
		}
		v := uint32(*x)
		ids[i] = &v
	}
	if err := pipeline.NeedType(env, field.Text); err != nil {
		return nil, err
	}
	t := env.Desc.Text
	if t == nil || !t.Tokens {
		return nil, fmt.Errorf("field %q stores no tokens: write it with a tokenizer, or decode its raw text", env.Desc.Name)
	}
	d := &tokensDecoder{ctx: a.ContextLength, sot: t.SOT, eot: t.EOT, pad: t.Pad, extra: a.Extra, item: item}
	if ids[0] != nil {
		d.sot = ids[0]
	}
	if ids[1] != nil {
		d.eot = ids[1]
	}
	if ids[2] != nil {
		d.pad = *ids[2]
	}
	if d.item == 4 && (t.VocabSize == 0 || uint64(t.VocabSize) > uint64(limit)+1) {
		return nil, fmt.Errorf("int32 tokens need a vocabulary below 2^31 (the field's is %d, 0: unknown)", t.VocabSize)
	}
	return d, nil
}

func (d *tokensDecoder) Out(pipeline.Spec) (pipeline.Spec, error) {
	n := d.ctx
	switch d.extra {
	case "lengths":
		n++
	case "mask":
		n += d.ctx
	}
	return pipeline.Spec{Shape: []int{n}, DType: fmt.Sprintf("<i%d", d.item)}, nil
}

func (d *tokensDecoder) put(out []byte, i int, x uint32) {
	if d.item == 8 {
		binary.LittleEndian.PutUint64(out[8*i:], uint64(x))
	} else {
		binary.LittleEndian.PutUint32(out[4*i:], x)
	}
}

func (d *tokensDecoder) Run(c *pipeline.Ctx, op int, _, out []byte) error {
	cp, err := drawCaption(c, op)
	if err != nil {
		return err
	}
	n := 0
	if d.sot != nil && n < d.ctx {
		d.put(out, n, *d.sot)
		n++
	}
	for k := 0; k < cp.NumTokens() && n < d.ctx; k++ {
		d.put(out, n, cp.Token(k))
		n++
	}
	if d.eot != nil {
		if n < d.ctx {
			d.put(out, n, *d.eot)
			n++
		} else {
			d.put(out, d.ctx-1, *d.eot) // cut: the last position ends the caption
		}
	}
	for k := n; k < d.ctx; k++ {
		d.put(out, k, d.pad)
	}
	switch d.extra {
	case "lengths":
		d.put(out, d.ctx, uint32(n))
	case "mask":
		for k := 0; k < d.ctx; k++ {
			d.put(out, d.ctx+k, uint32(min(max(n-k, 0), 1)))
		}
	}
	return nil
}

// rawTextDecoder writes a caption's UTF-8 bytes after their length (u64):
// 8 + max_bytes bytes, zero after the text. A longer caption is cut at
// the last whole character that fits.
type rawTextDecoder struct{ maxBytes int }

func newRawTextDecoder(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	var a struct {
		MaxBytes int `json:"max_bytes"`
	}
	if err := pipeline.Parse(raw, &a); err != nil {
		return nil, err
	}
	if a.MaxBytes < 0 {
		return nil, fmt.Errorf("max_bytes %d must not be negative", a.MaxBytes)
	}
	if err := pipeline.NeedType(env, field.Text); err != nil {
		return nil, err
	}
	if uint64(a.MaxBytes) > env.Reader.PageSize() {
		return nil, fmt.Errorf("max_bytes %d is more than a page of the file, %d bytes", a.MaxBytes, env.Reader.PageSize())
	}
	return rawTextDecoder{a.MaxBytes}, nil
}

func (d rawTextDecoder) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{8 + d.maxBytes}, DType: "|u1"}, nil
}

func (d rawTextDecoder) Run(c *pipeline.Ctx, op int, _, out []byte) error {
	cp, err := drawCaption(c, op)
	if err != nil {
		return err
	}
	t := cp.Text
	if !utf8.Valid(t) {
		return fmt.Errorf("%w: the caption is not valid UTF-8", field.ErrData)
	}
	if len(t) > d.maxBytes {
		t = t[:d.maxBytes]
		for i := len(t) - 1; i >= 0 && i >= len(t)-utf8.UTFMax; i-- {
			if utf8.RuneStart(t[i]) {
				if !utf8.FullRune(t[i:]) { // the last character was cut
					t = t[:i]
				}
				break
			}
		}
	}
	binary.LittleEndian.PutUint64(out, uint64(len(t)))
	n := copy(out[8:], t)
	clear(out[8+n:])
	return nil
}
