package beton

import (
	"fmt"
	"io"
	"os"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// ReadDescs reads only the header and field descriptors of path: what a
// caller needs to know the custom fields (and their column layouts) before
// it can Open the file.
func ReadDescs(path string) ([]field.Desc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, HeaderSize)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, fmt.Errorf("%s: %w: shorter than the %d-byte header", path, ErrFormat, HeaderSize)
	}
	h, err := parseHeader(head)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	descs := make([]byte, int(h.NumFields)*field.DescriptorSize)
	if _, err := io.ReadFull(f, descs); err != nil {
		return nil, fmt.Errorf("%s: %w: %d field descriptors run past the end of the file", path, ErrFormat, h.NumFields)
	}
	out := make([]field.Desc, h.NumFields)
	for i := range out {
		if out[i], err = field.ParseDesc(descs[i*field.DescriptorSize : (i+1)*field.DescriptorSize]); err != nil {
			return nil, fmt.Errorf("%s: %w: field %d: %v", path, ErrFormat, i, err)
		}
	}
	return out, nil
}
