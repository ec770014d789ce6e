package field

import (
	"errors"
	"fmt"
)

// ErrNoHandler is wrapped when a custom field is read without its handler.
var ErrNoHandler = errors.New("no handler for a custom field")

// Column is the size and alignment of a field's metadata column, following
// numpy's align=True struct rules.
type Column struct {
	Size, Align int
}

// Offsets of the packed RGBImage column {mode u8, width u16, height u16, data_ptr u64}.
const (
	RGBModeOff   = 0
	RGBWidthOff  = 1
	RGBHeightOff = 3
	RGBPtrOff    = 5
)

// ColumnOf returns the metadata column of a built-in field type.
func ColumnOf(t Type) (Column, error) {
	switch t {
	case Int, Float, NDArray, TorchTensor:
		return Column{8, 8}, nil
	case Bytes, JSON:
		return Column{16, 1}, nil
	case RGBImage:
		return Column{13, 1}, nil
	case Ragged:
		return Column{RaggedColumnSize, 8}, nil
	case Mask:
		return Column{MaskColumnSize, 8}, nil
	case Text:
		return Column{TextColumnSize, 8}, nil
	case Video:
		return Column{VideoColumnSize, 8}, nil
	case Audio:
		return Column{AudioColumnSize, 8}, nil
	}
	return Column{}, fmt.Errorf("type %v has no built-in column", t)
}

// HeapPtrOffset is where in a built-in field's column the heap pointer
// sits; ok is false for fields without heap bytes (Int, Float) and for
// custom ones, whose layout only their handler knows.
func HeapPtrOffset(t Type) (off int, ok bool) {
	switch t {
	case Bytes, JSON, NDArray, TorchTensor, Ragged, Mask, Text, Video, Audio:
		return 0, true
	case RGBImage:
		return RGBPtrOff, true
	}
	return 0, false
}

// Layout is where each column sits in a row.
type Layout struct {
	Offsets []int
	Columns []Column
	RowSize int
}

// NewLayout lays out the row for fields; custom fields take their column from
// custom (by field name), as FFCV takes it from the handler's metadata type.
func NewLayout(fields []Desc, custom map[string]Column) (Layout, error) {
	var l Layout
	maxAlign := 1
	off := 0
	for _, f := range fields {
		var c Column
		var err error
		if f.Type == Custom {
			var ok bool
			if c, ok = custom[f.Name]; !ok {
				return l, fmt.Errorf("%w: field %q has a custom type: pass a handler for it (custom_fields)", ErrNoHandler, f.Name)
			}
			if c.Size < 0 || c.Align < 1 || c.Align&(c.Align-1) != 0 {
				return l, fmt.Errorf("field %q: bad custom column %+v", f.Name, c)
			}
		} else if c, err = ColumnOf(f.Type); err != nil {
			return l, fmt.Errorf("field %q: %w", f.Name, err)
		}
		off = roundUp(off, c.Align)
		l.Offsets = append(l.Offsets, off)
		l.Columns = append(l.Columns, c)
		off += c.Size
		maxAlign = max(maxAlign, c.Align)
	}
	l.RowSize = roundUp(off, maxAlign)
	return l, nil
}

func roundUp(x, a int) int { return (x + a - 1) / a * a }
