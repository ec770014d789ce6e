package ingest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// Kinds of Arrow values (ffcv_column's kind).
const (
	ArrowBinary      = 0 // bytes or UTF-8 with int32 offsets
	ArrowLargeBinary = 1 // the same with int64 offsets
	ArrowInt64       = 2
	ArrowFloat64     = 3
)

// ArrowColumn is one Arrow array of a record batch, its buffers as pyarrow
// lays them out: row r is element Offset + r (for a list column, the list
// of value elements there). Every buffer is a bounded slice; one too short
// for what the column says is an error, never a read past its end.
type ArrowColumn struct {
	Kind int
	List int // 0: a value per row; 32 or 64: a list of values per row, offsets of that width
	// Offset is the array's offset; Validity its rows' bitmap (nil: all valid).
	Offset   int64
	Validity []byte
	// ListOffsets, for list columns: each row's first value element, and
	// one past the last; ValuesOffset and ValuesValidity are the values
	// array's offset and bitmap.
	ListOffsets    []byte
	ValuesOffset   int64
	ValuesValidity []byte
	// Offsets of binary values into Data; Data holds the bytes of binary
	// values, or the int64 or float64 values.
	Offsets []byte
	Data    []byte
	// TokenOffsets and Tokens, for a TextField with tokens: caption k's ids
	// are Tokens[TokenOffsets[k]:TokenOffsets[k+1]], captions in row and
	// list order. nil otherwise.
	TokenOffsets []uint64
	Tokens       []uint32
}

func (a *ArrowColumn) binary() bool { return a.Kind == ArrowBinary || a.Kind == ArrowLargeBinary }

// bit is element i of bitmap b (nil: every bit set).
func bit(b []byte, i int64) (bool, error) {
	if b == nil {
		return true, nil
	}
	if i < 0 || i/8 >= int64(len(b)) {
		return false, fmt.Errorf("validity bit %d past the bitmap's %d bytes", i, len(b))
	}
	return b[i/8]&(1<<(i%8)) != 0, nil
}

// offsetAt is element i of an int32 (wide false) or int64 offsets buffer.
func offsetAt(b []byte, wide bool, i int64) (int64, error) {
	w := int64(4)
	if wide {
		w = 8
	}
	if i < 0 || i >= int64(len(b))/w {
		return 0, fmt.Errorf("offset %d past the %d bytes of offsets", i, len(b))
	}
	if wide {
		return int64(binary.LittleEndian.Uint64(b[w*i:])), nil
	}
	return int64(int32(binary.LittleEndian.Uint32(b[w*i:]))), nil
}

// Elements is the number of value elements the first rows rows address:
// Offset + rows for a column of values, the values' offset plus the last
// list offset for a list column (what Offsets and ValuesValidity cover).
func (a *ArrowColumn) Elements(rows int) (int64, error) {
	if a.Offset < 0 || a.ValuesOffset < 0 || rows < 0 {
		return 0, fmt.Errorf("offsets %d, %d and %d rows", a.Offset, a.ValuesOffset, rows)
	}
	end := a.Offset + int64(rows)
	if a.List == 0 {
		return end, nil
	}
	if a.List != 32 && a.List != 64 {
		return 0, fmt.Errorf("list offsets of %d bits", a.List)
	}
	last, err := offsetAt(a.ListOffsets, a.List == 64, end)
	if err != nil {
		return 0, err
	}
	if last < 0 || last > math.MaxInt64-a.ValuesOffset {
		return 0, fmt.Errorf("list offset %d", last)
	}
	return a.ValuesOffset + last, nil
}

// span is the range of value elements of row r, and whether r is valid.
func (a *ArrowColumn) span(r int) (lo, hi int64, ok bool, err error) {
	i := a.Offset + int64(r)
	if ok, err := bit(a.Validity, i); !ok || err != nil {
		return 0, 0, false, err
	}
	if a.List == 0 {
		return i, i + 1, true, nil
	}
	wide := a.List == 64
	if lo, err = offsetAt(a.ListOffsets, wide, i); err != nil {
		return 0, 0, false, err
	}
	if hi, err = offsetAt(a.ListOffsets, wide, i+1); err != nil {
		return 0, 0, false, err
	}
	if lo < 0 || hi < lo {
		return 0, 0, false, fmt.Errorf("row %d's list spans values [%d, %d)", r, lo, hi)
	}
	return lo + a.ValuesOffset, hi + a.ValuesOffset, true, nil
}

// binaryAt is value element i of a binary column, and whether it is valid.
func (a *ArrowColumn) binaryAt(i int64) ([]byte, bool, error) {
	if a.List != 0 {
		if ok, err := bit(a.ValuesValidity, i); !ok || err != nil {
			return nil, false, err
		}
	}
	wide := a.Kind == ArrowLargeBinary
	lo, err := offsetAt(a.Offsets, wide, i)
	if err != nil {
		return nil, false, err
	}
	hi, err := offsetAt(a.Offsets, wide, i+1)
	if err != nil {
		return nil, false, err
	}
	if lo < 0 || hi < lo || hi > int64(len(a.Data)) {
		return nil, false, fmt.Errorf("value %d spans bytes [%d, %d) of %d", i, lo, hi, len(a.Data))
	}
	return a.Data[lo:hi], true, nil
}

// one is row r's single binary value (copied), and whether it is valid.
func (a *ArrowColumn) one(r int) ([]byte, bool, error) {
	if !a.binary() || a.List != 0 {
		return nil, false, fmt.Errorf("the column holds no single bytes or string per row")
	}
	lo, _, ok, err := a.span(r)
	if !ok || err != nil {
		return nil, false, err
	}
	b, ok, err := a.binaryAt(lo)
	return append([]byte(nil), b...), ok, err
}

func (a *ArrowColumn) fixed(r int, size int64) ([]byte, bool, error) {
	lo, _, ok, err := a.span(r)
	if !ok || err != nil {
		return nil, false, err
	}
	if lo < 0 || lo >= int64(len(a.Data))/size {
		return nil, false, fmt.Errorf("value %d past the %d bytes of data", lo, len(a.Data))
	}
	return a.Data[lo*size : (lo+1)*size], true, nil
}

// Captions is the number of captions of the first rows rows: every valid
// value of every valid row (the captions tokens are given for).
func (a *ArrowColumn) Captions(rows int) (int64, error) {
	n := int64(0)
	for r := range rows {
		lo, hi, ok, err := a.span(r)
		if err != nil {
			return 0, err
		}
		for i := lo; ok && i < hi; i++ {
			v := true
			if a.List != 0 {
				if v, err = bit(a.ValuesValidity, i); err != nil {
					return 0, err
				}
			}
			if v {
				n++
			}
		}
	}
	return n, nil
}

// ArrowItems makes the samples of rows rows of Arrow columns, one per
// field; keys (nil: "row N") names them; first is the number of rows the
// source had before. A missing value is a problem that drops its sample;
// a column that does not hold what it says is an error.
func ArrowItems(fields []field.Desc, cols []ArrowColumn, keys *ArrowColumn, rows int, first uint64) ([]*Item, error) {
	if len(cols) != len(fields) {
		return nil, fmt.Errorf("%d columns for %d fields", len(cols), len(fields))
	}
	items := make([]*Item, rows)
	for r := range items {
		items[r] = &Item{Key: fmt.Sprintf("row %d", first+uint64(r)), Values: make([]field.Value, len(fields))}
	}
	if keys != nil {
		for r := range items {
			if b, ok, err := keys.one(r); err != nil {
				return nil, fmt.Errorf("keys: %w", err)
			} else if ok {
				items[r].Key = string(b)
			}
		}
	}
	for f, d := range fields {
		if err := cols[f].fill(d, items, f); err != nil {
			return nil, fmt.Errorf("field %q: %w", d.Name, err)
		}
	}
	return items, nil
}

// fill sets field f of every item from the column.
func (a *ArrowColumn) fill(d field.Desc, items []*Item, f int) error {
	missing := func(it *Item, what string) {
		it.Problems = append(it.Problems, Problem{Reason: fmt.Sprintf("field %q: %s", d.Name, what), Dropped: true})
	}
	switch d.Type {
	case field.Text:
		if !a.binary() {
			return fmt.Errorf("a TextField takes a string column or a list of strings")
		}
		caption := 0
		for r, it := range items {
			lo, hi, ok, err := a.span(r)
			if err != nil {
				return err
			}
			if !ok {
				missing(it, "no caption (null)")
				continue
			}
			v := field.Value{}
			null := false
			for i := lo; i < hi; i++ {
				b, ok, err := a.binaryAt(i)
				if err != nil {
					return err
				}
				if !ok {
					null = true
					continue
				}
				v.Texts = append(v.Texts, append([]byte(nil), b...))
				if a.TokenOffsets != nil {
					if caption+1 >= len(a.TokenOffsets) {
						return fmt.Errorf("caption %d has no token offsets (%d given)", caption, len(a.TokenOffsets))
					}
					t0, t1 := a.TokenOffsets[caption], a.TokenOffsets[caption+1]
					if t0 > t1 || t1 > uint64(len(a.Tokens)) {
						return fmt.Errorf("caption %d's tokens [%d, %d) outside the %d given", caption, t0, t1, len(a.Tokens))
					}
					v.Tokens = append(v.Tokens, append([]uint32(nil), a.Tokens[t0:t1]...))
				}
				caption++
			}
			switch {
			case null:
				missing(it, "a null caption in the list")
			case len(v.Texts) == 0:
				missing(it, "an empty list of captions")
			}
			it.Values[f] = v
		}
		return nil
	case field.RGBImage, field.Audio, field.JSON, field.Bytes:
		if !a.binary() || a.List != 0 {
			return fmt.Errorf("a %v takes a binary or string column", d.Type)
		}
		for r, it := range items {
			b, ok, err := a.one(r)
			if err != nil {
				return err
			}
			if !ok {
				missing(it, "null")
				continue
			}
			switch d.Type {
			case field.RGBImage, field.Audio:
				it.Values[f] = field.Value{Data: b, Encoded: true}
			case field.JSON:
				if !json.Valid(b) {
					missing(it, "not valid JSON")
					continue
				}
				it.Values[f] = field.Value{Data: b}
			default:
				it.Values[f] = field.Value{Data: b}
			}
		}
		return nil
	case field.Int, field.Float:
		want := ArrowInt64
		if d.Type == field.Float {
			want = ArrowFloat64
		}
		if a.Kind != want || a.List != 0 {
			return fmt.Errorf("a %v takes an int64 or float64 column (cast it)", d.Type)
		}
		for r, it := range items {
			b, ok, err := a.fixed(r, 8)
			if err != nil {
				return err
			}
			if !ok {
				missing(it, "null")
				continue
			}
			x := binary.LittleEndian.Uint64(b)
			if d.Type == field.Int {
				it.Values[f] = field.Value{Int: int64(x)}
			} else {
				it.Values[f] = field.Value{Float: math.Float64frombits(x)}
			}
		}
		return nil
	}
	return fmt.Errorf("a %v cannot come from an Arrow column", d.Type)
}
