package beton

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// A file ends at its last heap byte and its allocation table: a dataset
// whose tables and heap fit in one page is that page, the heap right after
// the tables; a larger one starts its heap at the page after the tables and
// ends it where its last page's bytes end. Every sample reads back.
func TestFileEndsAtItsData(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, size   int
		pageSize  uint64
		onePage   bool
		wantPages uint64 // heap pages
	}{
		// 50 samples of 20-40 kB: a small shard of photos.
		{"one page", 50, 20_000, MinPageSize, true, 1},
		{"one page of the default size", 50, 20_000, DefaultPageSize, true, 1},
		{"one sample", 1, 10, DefaultPageSize, true, 1},
		// 60 samples of 150-300 kB: the heap needs several 2 MiB pages.
		{"many pages", 60, 150_000, MinPageSize, false, 6},
		// 32-byte rows: 70,000 of them leave the heap no room in the first page.
		{"rows fill the page", 70_000, 3, MinPageSize, false, 1},
		// 1.28 MB of rows, held while the heap might fit beside them, written
		// once it needs more pages.
		{"rows held, then written", 40_000, 100, MinPageSize, false, 4},
		// A heap just over one page: it starts at the page after the tables.
		{"heap just over one page", 8, 261_500, MinPageSize, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeRows(t, filepath.Join(t.TempDir(), "d.beton"), shardFields, 0, tc.n, tc.size, tc.pageSize)
			r, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			tables := r.MetadataOffset() + r.NumSamples()*uint64(r.Layout.RowSize)
			start, end, heap := ^uint64(0), uint64(0), uint64(0)
			for k := uint64(0); k < r.NumAllocs(); k++ {
				e := r.Alloc(k)
				start, end, heap = min(start, e.Ptr), max(end, e.Ptr+e.Size), heap+e.Size
			}
			if r.Header.AllocTablePtr != end {
				t.Errorf("allocation table at byte %d, the heap ends at byte %d", r.Header.AllocTablePtr, end)
			}
			if want := end + r.NumAllocs()*AllocEntrySize; uint64(st.Size()) != want {
				t.Errorf("file has %d bytes, its heap and allocation table end at byte %d", st.Size(), want)
			}
			ps := r.PageSize()
			if tc.onePage {
				if start != tables || end != tables+heap {
					t.Errorf("heap [%d, %d) of %d bytes, want it right after the tables, at byte %d", start, end, heap, tables)
				}
			} else if first := (tables + ps - 1) / ps * ps; start != first {
				t.Errorf("heap starts at byte %d, want the page after the tables, byte %d", start, first)
			}
			if pages := (end-1)/ps - start/ps + 1; pages != tc.wantPages {
				t.Errorf("heap on %d pages, want %d", pages, tc.wantPages)
			}
			for i := 0; i < tc.n; i++ {
				for f, v := range rowOf(i, tc.size) {
					col, got, err := r.Read(uint64(i), f)
					if err != nil {
						t.Fatal(err)
					}
					if f == 1 { // the label: no heap bytes
						got, v.Data = col, binary.LittleEndian.AppendUint64(nil, uint64(v.Int))
					}
					if !bytes.Equal(got, v.Data) {
						t.Fatalf("sample %d, field %d: %d bytes differ from the %d written", i, f, len(got), len(v.Data))
					}
				}
			}
		})
	}
}

// A file rewritten in place under an open reader (same inode, other bytes)
// leaves the reader's metadata table as it was opened: labels and heap
// pointers cannot silently become the new bytes'.
func TestMetadataKeptWhenRewrittenInPlace(t *testing.T) {
	path := writeRows(t, filepath.Join(t.TempDir(), "d.beton"), shardFields, 0, 50, 2_000, DefaultPageSize)
	r, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := bytes.Clone(r.Metadata())
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	junk := bytes.Repeat([]byte{0xA5}, len(before)+4096)
	if _, err := f.WriteAt(junk, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !bytes.Equal(r.Metadata(), before) {
		t.Fatal("the metadata table changed with the file under the reader")
	}
}
