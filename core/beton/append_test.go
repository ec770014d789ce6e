package beton

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// An appending writer, which learns the number of samples only at Close,
// writes the very bytes Create writes for the same samples: also when the
// metadata rows outgrow the room before its provisional first page and the
// heap has to move, and when no sample has heap bytes.
func TestAppenderMatchesCreate(t *testing.T) {
	intOnly := []field.Desc{{Type: field.Int, Name: "label"}}
	for _, tc := range []struct {
		name    string
		descs   []field.Desc
		n, size int
	}{
		{"empty", shardFields, 0, 10},
		{"one page", shardFields, 40, 100},
		{"many pages", shardFields, 60, 150_000},
		// 32-byte rows: 70,000 of them need more than the first 2 MiB page.
		{"rows move the heap", shardFields, 70_000, 3},
		{"no heap", intOnly, 100, 1},
		{"no heap, many rows", intOnly, 300_000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want, err := os.ReadFile(writeRows(t, filepath.Join(dir, "create.beton"), tc.descs, 0, tc.n, tc.size, MinPageSize))
			if err != nil {
				t.Fatal(err)
			}
			encs := make([]field.Encoder, len(tc.descs))
			for k, d := range tc.descs {
				if encs[k], err = field.NewEncoder(d); err != nil {
					t.Fatal(err)
				}
			}
			se, err := NewSampleEncoder(tc.descs, encs)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "append.beton")
			w, err := CreateAppender(path, tc.descs, WriterOptions{PageSize: MinPageSize})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.n; i++ {
				enc, err := se.Encode(uint64(i), rowOf(i, tc.size)[:len(tc.descs)])
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Append(enc); err != nil {
					t.Fatal(err)
				}
			}
			if w.Samples() != uint64(tc.n) {
				t.Fatalf("Samples() = %d, want %d", w.Samples(), tc.n)
			}
			if est := int64(w.Size()); tc.n > 0 && (est < int64(len(want))-MinPageSize || est > int64(len(want))+MinPageSize) {
				t.Errorf("Size() = %d, the file has %d bytes", est, len(want))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("appended file (%d bytes) differs from the created one (%d bytes)", len(got), len(want))
			}
			r, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.NumSamples() != uint64(tc.n) {
				t.Fatalf("%d samples, want %d", r.NumSamples(), tc.n)
			}
		})
	}
}

// The two kinds of writer refuse each other's calls; an aborted appender
// leaves no file.
func TestAppenderMisuse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.beton")
	w, err := CreateAppender(path, shardFields, WriterOptions{PageSize: MinPageSize})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(0, rowOf(0, 10)); err == nil {
		t.Fatal("Put on an appending writer succeeded")
	}
	if err := w.Append(nil); err == nil {
		t.Fatal("Append of a sample without fields succeeded")
	}
	w.Abort()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("aborted appender left %s (%v)", path, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Fatalf("aborted appender left %v", left)
	}
}

// A writer created for at most n samples (a writer that skips bad input)
// writes the samples put, with their values; one created for exactly n
// refuses to close short.
func TestAtMost(t *testing.T) {
	encs := make([]field.Encoder, len(shardFields))
	for k, d := range shardFields {
		var err error
		if encs[k], err = field.NewEncoder(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		atMost bool
		put    int
		want   string
	}{
		{"exact", false, 10, ""},
		{"short", false, 7, "only 7 of 10 samples"},
		{"bound, short", true, 7, ""},
		{"bound, none", true, 0, ""},
		{"bound, full", true, 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.beton")
			w, err := Create(path, shardFields, encs, 10, WriterOptions{PageSize: MinPageSize, Workers: 2, AtMost: tc.atMost})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.put; i++ {
				if err := w.Put(uint64(i), rowOf(3*i, 5000)); err != nil {
					t.Fatal(err)
				}
			}
			err = w.Close()
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Close() = %v, want %q", err, tc.want)
				}
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Fatalf("a failed Close left %s", path)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.NumSamples() != uint64(tc.put) {
				t.Fatalf("%d samples, want %d", r.NumSamples(), tc.put)
			}
			for i := 0; i < tc.put; i++ {
				col, err := r.Column(uint64(i), 0) // a bytes field: ptr, size
				if err != nil {
					t.Fatal(err)
				}
				got, err := r.Heap(binary.LittleEndian.Uint64(col), binary.LittleEndian.Uint64(col[8:]))
				if err != nil {
					t.Fatal(err)
				}
				if want := rowOf(3*i, 5000)[0].Data; !bytes.Equal(got, want) {
					t.Fatalf("sample %d: %d bytes, want %d", i, len(got), len(want))
				}
			}
		})
	}
}
