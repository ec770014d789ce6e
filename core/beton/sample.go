package beton

import (
	"encoding/binary"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// Read returns the metadata column of field f for sample i and the heap bytes
// it refers to (nil for Int and Float). Every pointer and size is checked
// against the file, so a corrupt file gives an error, never a bad slice.
func (r *Reader) Read(i uint64, f int) (col, heap []byte, err error) {
	col, ptr, size, ok, err := r.Locate(i, f)
	if err != nil || !ok {
		return col, nil, err
	}
	if r.data == nil {
		return nil, nil, fmt.Errorf("%s: sample %d, field %q: %w", r.Path, i, r.Fields[f].Name, ErrNotMapped)
	}
	return col, r.data[ptr : ptr+size : ptr+size], nil
}

// Locate is Read without touching the heap: it returns the column and the
// checked position (ptr, size) of the heap bytes; ok is false for fields
// without heap bytes.
func (r *Reader) Locate(i uint64, f int) (col []byte, ptr, size uint64, ok bool, err error) {
	if f < 0 || f >= len(r.Fields) {
		return nil, 0, 0, false, fmt.Errorf("field index %d out of range [0, %d)", f, len(r.Fields))
	}
	d := &r.Fields[f]
	if col, err = r.Column(i, f); err != nil {
		return nil, 0, 0, false, err
	}
	ptr, size, ok, err = r.heapRef(d, col)
	if err == nil && ok {
		err = r.CheckHeap(ptr, size)
	}
	if err != nil {
		return nil, 0, 0, false, fmt.Errorf("%s: field %q: %w", r.where(i), d.Name, err)
	}
	return col, ptr, size, ok, nil
}

// heapRef returns where field d's heap bytes are, per its column; has is
// false for fields without heap bytes (any stored size is possible, even
// 2^64-1, so no size value can stand for "none").
func (r *Reader) heapRef(d *field.Desc, col []byte) (ptr, size uint64, has bool, err error) {
	switch d.Type {
	case field.Bytes, field.JSON:
		return binary.LittleEndian.Uint64(col), binary.LittleEndian.Uint64(col[8:]), true, nil
	case field.NDArray, field.TorchTensor:
		n, err := d.ArrayBytes()
		return binary.LittleEndian.Uint64(col), n, true, err
	case field.Ragged:
		ptr, rows := field.RaggedRef(col)
		row, err := d.RowBytes()
		if err == nil && rows > (1<<62)/max(row, 1) {
			err = fmt.Errorf("%w: %d rows", ErrFormat, rows)
		}
		return ptr, rows * row, true, err
	case field.Mask:
		m := field.ParseMaskMeta(col)
		return m.Ptr, m.Size, true, nil
	case field.Text:
		m := field.ParseTextMeta(col)
		return m.Ptr, m.Size, true, nil
	case field.Video:
		m := field.ParseVideoMeta(col)
		return m.Ptr, m.Size, true, nil
	case field.Audio:
		m := field.ParseAudioMeta(col)
		return m.Ptr, m.Size, true, nil
	case field.RGBImage:
		m := field.ParseRGBMeta(col)
		if m.Mode == field.ModeJPEG {
			size, err = r.AllocSize(m.Ptr)
			return m.Ptr, size, true, err
		}
		return m.Ptr, uint64(m.Width) * uint64(m.Height) * 3, true, nil
	}
	return 0, 0, false, nil
}
