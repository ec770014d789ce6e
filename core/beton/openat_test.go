package beton

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

func fixture(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("FFCV_FIXTURES")
	if dir == "" {
		dir = "../../tests/fixtures/ffcv-1.0"
	}
	p := filepath.Join(dir, name+".beton")
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// countingAt counts the ReadAt calls made on a source.
type countingAt struct {
	io.ReaderAt
	calls atomic.Int64
}

func (c *countingAt) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	return c.ReaderAt.ReadAt(p, off)
}

// TestOpenAtMatchesOpen: a reader over an *os.File or a bytes.Reader sees the
// same header, fields, tables and heap bytes (through ReadAt) as the mapped
// one, after three reads; the map-only accessors fail with ErrNotMapped.
func TestOpenAtMatchesOpen(t *testing.T) {
	for _, name := range []string{"scalars", "arrays", "images_jpg_var", "images_raw_fixed", "pages_2mib"} {
		path := fixture(t, name)
		want, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer want.Close()
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range []io.ReaderAt{f, bytes.NewReader(raw)} {
			c := &countingAt{ReaderAt: src}
			r, err := OpenAt(path, c, int64(len(raw)), nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if n := c.calls.Load(); n > 3 {
				t.Errorf("%s: opened with %d reads, want at most 3", name, n)
			}
			if r.Header != want.Header || r.Layout.RowSize != want.Layout.RowSize || len(r.Fields) != len(want.Fields) {
				t.Fatalf("%s: header %+v, want %+v", name, r.Header, want.Header)
			}
			if !bytes.Equal(r.Metadata(), want.Metadata()) || !bytes.Equal(r.AllocTable(), want.AllocTable()) {
				t.Fatalf("%s: tables differ", name)
			}
			for i := uint64(0); i < r.NumSamples(); i++ {
				for fi := range r.Fields {
					col, ptr, size, ok, err := r.Locate(i, fi)
					wcol, wptr, wsize, wok, werr := want.Locate(i, fi)
					if !bytes.Equal(col, wcol) || ptr != wptr || size != wsize || ok != wok || (err == nil) != (werr == nil) {
						t.Fatalf("%s: sample %d field %d: Locate differs (%v, %v)", name, i, fi, err, werr)
					}
					if !ok || err != nil {
						continue
					}
					_, heap, _ := want.Read(i, fi)
					got := make([]byte, size)
					if _, err := r.ReadAt(got, int64(ptr)); err != nil || !bytes.Equal(got, heap) {
						t.Fatalf("%s: sample %d field %d: heap bytes through ReadAt differ (%v)", name, i, fi, err)
					}
					if _, _, err := r.Read(i, fi); !errors.Is(err, ErrNotMapped) {
						t.Fatalf("%s: Read without a map: %v, want ErrNotMapped", name, err)
					}
					if _, err := r.Heap(ptr, size); !errors.Is(err, ErrNotMapped) {
						t.Fatalf("%s: Heap without a map: %v, want ErrNotMapped", name, err)
					}
				}
			}
			wp, ws, werr := want.AllocIndex()
			p, s, err := r.AllocIndex()
			if err != nil || werr != nil || !slices.Equal(p, wp) || !slices.Equal(s, ws) {
				t.Fatalf("%s: allocation index differs (%v, %v)", name, err, werr)
			}
			if _, err := r.Data(); !errors.Is(err, ErrNotMapped) || !strings.Contains(err.Error(), path) {
				t.Fatalf("%s: Data without a map: %v", name, err)
			}
			if r.Mapped() || !want.Mapped() {
				t.Fatalf("%s: Mapped %v, mapped reader %v", name, r.Mapped(), want.Mapped())
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestOpenAtErrors: a truncated or corrupt file gives OpenAt exactly the
// error it gives Open.
func TestOpenAtErrors(t *testing.T) {
	path := fixture(t, "images_jpg_var")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	heapOff := r.spans[0].heapStart
	allocPtr := r.Header.AllocTablePtr
	r.Close()
	put64 := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
	}
	cases := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"good", func(b []byte) []byte { return b }},
		{"empty", func(b []byte) []byte { return b[:0] }},
		{"short header", func(b []byte) []byte { return b[:HeaderSize-1] }},
		{"header only", func(b []byte) []byte { return b[:HeaderSize] }},
		{"cut in descriptors", func(b []byte) []byte { return b[:HeaderSize+500] }},
		{"cut in metadata", func(b []byte) []byte { return b[:heapOff-7] }},
		{"cut in heap", func(b []byte) []byte { return b[:allocPtr-100] }},
		{"cut in allocation table", func(b []byte) []byte { return b[:len(b)-5] }},
		{"one entry short", func(b []byte) []byte { return b[:len(b)-AllocEntrySize] }},
		{"version", func(b []byte) []byte { b[0] = 3; return b }},
		{"page size", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 3<<20); return b }},
		{"too many samples", put64(8, 1<<62)},
		{"more samples", put64(8, 1000)},
		{"table before heap", put64(16, heapOff-1)},
		{"table past end", put64(16, uint64(len(good))+24)},
		{"bad field type", func(b []byte) []byte { b[HeaderSize] = 99; return b }},
	}
	dir := t.TempDir()
	for _, c := range cases {
		b := c.edit(slices.Clone(good))
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".beton")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ro, errOpen := Open(p, nil)
		ra, errAt := OpenAt(p, bytes.NewReader(b), int64(len(b)), nil)
		if (errOpen == nil) != (c.name == "good") {
			t.Fatalf("%s: Open gave %v", c.name, errOpen)
		}
		if errOpen == nil {
			if errAt != nil {
				t.Fatalf("%s: OpenAt failed: %v", c.name, errAt)
			}
			ro.Close()
			ra.Close()
			continue
		}
		if errAt == nil || errAt.Error() != errOpen.Error() || !errors.Is(errAt, ErrFormat) {
			t.Errorf("%s: OpenAt error\n  %v\nOpen error\n  %v", c.name, errAt, errOpen)
		}
	}
}

// failingAt fails every read at or past off.
type failingAt struct {
	io.ReaderAt
	off int64
	err error
}

func (f failingAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.off {
		return 0, f.err
	}
	return f.ReaderAt.ReadAt(p, off)
}

// TestOpenAtSourceErrors: a source shorter than its stated size is a
// truncated file; a failing source's error comes back with the name and the
// table it was reading.
func TestOpenAtSourceErrors(t *testing.T) {
	path := fixture(t, "arrays")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	allocPtr := int64(r.Header.AllocTablePtr)
	r.Close()
	boom := errors.New("connection reset")
	cases := []struct {
		name string
		src  io.ReaderAt
		size int64
		want []string
		is   error
	}{
		{"shorter than stated", bytes.NewReader(raw[:len(raw)-24]), int64(len(raw)), []string{"truncated"}, ErrFormat},
		{"fails at once", failingAt{bytes.NewReader(raw), 0, boom}, int64(len(raw)), []string{"read the header"}, boom},
		{"fails on the allocation table", failingAt{bytes.NewReader(raw), allocPtr, boom}, int64(len(raw)), []string{"allocation table"}, boom},
	}
	for _, c := range cases {
		_, err := OpenAt("remote:arrays", c.src, c.size, nil)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), "remote:arrays") {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
}

// closingAt records Close.
type closingAt struct {
	io.ReaderAt
	closed bool
}

func (c *closingAt) Close() error { c.closed = true; return nil }

func TestOpenAtClosesSource(t *testing.T) {
	raw, err := os.ReadFile(fixture(t, "scalars"))
	if err != nil {
		t.Fatal(err)
	}
	c := &closingAt{ReaderAt: bytes.NewReader(raw)}
	r, err := OpenAt("scalars", c, int64(len(raw)), nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if !c.closed {
		t.Fatal("Close did not close the source")
	}
	if _, err := r.ReadAt(make([]byte, 1), 0); err == nil {
		t.Fatal("ReadAt after Close succeeded")
	}
}
