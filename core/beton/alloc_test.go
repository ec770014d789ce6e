package beton

import (
	"cmp"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestAllocPages: the page maps are every allocation's (sample, start page),
// each pair once, sorted; a table entry outside the heap is an error.
func TestAllocPages(t *testing.T) {
	dir := t.TempDir()
	open := func(p string) *Reader {
		r, err := Open(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	shards, _ := openShards(t, []int{5, 9, 3}, 400_000)
	joined, err := Join("ds", shards)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { joined.Close() })
	corrupt := writeRows(t, filepath.Join(dir, "corrupt.beton"), shardFields[:1], 0, 3, 100, MinPageSize)
	corruptTable(t, corrupt)
	cases := []struct {
		name  string
		r     *Reader
		pages int // distinct pages the allocations start on, at least
		err   error
	}{
		{"many samples a page", open(writeRows(t, filepath.Join(dir, "small.beton"), shardFields, 0, 200, 100, MinPageSize)), 1, nil},
		{"samples over several pages", open(writeRows(t, filepath.Join(dir, "big.beton"), shardFields, 0, 12, 900_000, MinPageSize)), 4, nil},
		{"joined shards", joined, 3, nil},
		{"FFCV's own file", open(filepath.Join("..", "..", "tests", "fixtures", "ffcv-1.0", "arrays.beton")), 1, nil},
		{"allocation outside the heap", open(corrupt), 0, ErrFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			samples, pages, err := c.r.AllocPages()
			if !errors.Is(err, c.err) {
				t.Fatalf("got %v, want %v", err, c.err)
			}
			if c.err != nil {
				return
			}
			want := map[[2]uint64]bool{}
			for k := uint64(0); k < c.r.NumAllocs(); k++ {
				e := c.r.Alloc(k)
				want[[2]uint64{e.SampleID, e.Ptr / c.r.PageSize()}] = true
			}
			var got [][2]uint64
			distinct := map[uint64]bool{}
			for k := range samples {
				got = append(got, [2]uint64{samples[k], pages[k]})
				distinct[pages[k]] = true
			}
			sorted := slices.IsSortedFunc(got, func(a, b [2]uint64) int {
				return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
			})
			if len(samples) != len(pages) || len(got) != len(want) || !sorted || len(distinct) < c.pages {
				t.Fatalf("%d pairs over %d pages (sorted %v), want the %d distinct ones over at least %d",
					len(got), len(distinct), sorted, len(want), c.pages)
			}
			for _, p := range got {
				if !want[p] {
					t.Fatalf("pair %v is no allocation's", p)
				}
			}
		})
	}
}

// corruptTable points the first allocation table entry of the file at path
// past its end.
func corruptTable(t *testing.T, path string) {
	t.Helper()
	r, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := r.Header.AllocTablePtr
	r.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(raw[at+8:], uint64(len(raw))+1) // entry 0's pointer
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
