// Package betontest writes and opens the small .beton files tests read.
// Only core/beton's own tests, which it would import, do without it.
package betontest

import (
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
)

// Encoders are field.NewEncoder's encoders of descs.
func Encoders(t testing.TB, descs []field.Desc) []field.Encoder {
	t.Helper()
	encs := make([]field.Encoder, len(descs))
	for k, d := range descs {
		e, err := field.NewEncoder(d)
		if err != nil {
			t.Fatalf("field %q: %v", d.Name, err)
		}
		encs[k] = e
	}
	return encs
}

// WriteFile writes n samples of the fields descs (encoded by encs) to path,
// sample i holding row(i), and returns path. A failed Put aborts the writer
// before t fails, so no half-written file is left.
func WriteFile(t testing.TB, path string, descs []field.Desc, encs []field.Encoder, opts beton.WriterOptions,
	n int, row func(i int) []field.Value) string {
	t.Helper()
	w, err := beton.Create(path, descs, encs, uint64(n), opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := w.Put(uint64(i), row(i)); err != nil {
			w.Abort()
			t.Fatalf("sample %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Write is WriteFile, then Open.
func Write(t testing.TB, path string, descs []field.Desc, encs []field.Encoder, opts beton.WriterOptions,
	n int, row func(i int) []field.Value) *beton.Reader {
	t.Helper()
	return Open(t, WriteFile(t, path, descs, encs, opts, n, row))
}

// Open opens the file at path, closed when the test ends.
func Open(t testing.TB, path string) *beton.Reader {
	t.Helper()
	r, err := beton.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
