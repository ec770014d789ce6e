package beton

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
)

var shardFields = []field.Desc{
	{Type: field.Bytes, Name: "blob"},
	{Type: field.Int, Name: "label"},
	{Type: field.NDArray, Name: "arr", DType: "<f4", Shape: []uint64{3}},
}

// rowOf is global sample g: a blob of size bytes or more, its label, an array.
func rowOf(g, size int) []field.Value {
	b := make([]byte, size+(g*997)%size)
	for k := range b {
		b[k] = byte(g*7 + k/101)
	}
	arr := make([]byte, 12)
	binary.LittleEndian.PutUint32(arr, uint32(g))
	return []field.Value{{Data: b}, {Int: int64(g)}, {Data: arr}}
}

// writeRows writes rows [first, first+n) with fields descs to path.
func writeRows(t testing.TB, path string, descs []field.Desc, first, n, size int, pageSize uint64) string {
	t.Helper()
	encs := make([]field.Encoder, len(descs))
	for k, d := range descs {
		e, err := field.NewEncoder(d)
		if err != nil {
			t.Fatal(err)
		}
		encs[k] = e
	}
	w, err := Create(path, descs, encs, uint64(n), WriterOptions{PageSize: pageSize, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := w.Put(uint64(i), rowOf(first+i, size)[:len(descs)]); err != nil {
			w.Abort()
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// openShards writes shards of the given sizes (and the same rows as one file)
// and opens them.
func openShards(t testing.TB, counts []int, size int) (shards []*Reader, whole *Reader) {
	t.Helper()
	dir := t.TempDir()
	total := 0
	for k, n := range counts {
		p := writeRows(t, filepath.Join(dir, fmt.Sprintf("part-%02d.beton", k)), shardFields, total, n, size, MinPageSize)
		r, err := Open(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, r)
		total += n
	}
	whole, err := Open(writeRows(t, filepath.Join(dir, "whole.beton"), shardFields, 0, total, size, MinPageSize), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { whole.Close() })
	return shards, whole
}

// TestJoin: joined shards read every sample as the same rows written as one
// file, map sample indices to shards in order, keep every allocation in its
// shard's part of the address space with no page shared between shards,
// and read the same bytes through the map and through ReadAt.
func TestJoin(t *testing.T) {
	cases := []struct {
		name   string
		counts []int
		size   int
	}{
		{"three shards", []int{5, 7, 3}, 3000},
		{"one shard", []int{12}, 3000},
		{"empty first shard", []int{0, 10}, 3000},
		{"empty shards between", []int{4, 0, 0, 6}, 3000},
		{"several pages per shard", []int{30, 25}, 300_000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shards, whole := openShards(t, c.counts, c.size)
			r, err := Join("ds", shards)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.NumSamples() != whole.NumSamples() || !r.Mapped() {
				t.Fatalf("%d samples (mapped %v), want %d", r.NumSamples(), r.Mapped(), whole.NumSamples())
			}
			g := uint64(0)
			for k, n := range c.counts {
				for j := uint64(0); j < uint64(n); j, g = j+1, g+1 {
					if sk, local := r.ShardOf(g); sk != k || local != j {
						t.Fatalf("sample %d: ShardOf = (%d, %d), want (%d, %d)", g, sk, local, k, j)
					}
				}
			}
			shardOfPage := map[uint64]int{}
			for i := uint64(0); i < r.NumSamples(); i++ {
				k, _ := r.ShardOf(i)
				for f := range r.Fields {
					col, heap, err := r.Read(i, f)
					wcol, wheap, werr := whole.Read(i, f)
					if err != nil || werr != nil {
						t.Fatalf("sample %d field %d: %v, %v", i, f, err, werr)
					}
					if !bytes.Equal(heap, wheap) || (heap == nil && !bytes.Equal(col, wcol)) {
						t.Fatalf("sample %d field %d: bytes differ from the single file", i, f)
					}
					if heap == nil {
						continue
					}
					_, ptr, size, _, _ := r.Locate(i, f)
					if s := r.spans[k]; ptr < s.heapStart || ptr+size > s.heapEnd {
						t.Fatalf("sample %d: pointer %d outside shard %d's heap [%d, %d)", i, ptr, k, s.heapStart, s.heapEnd)
					}
					if prev, ok := shardOfPage[ptr/r.PageSize()]; ok && prev != k {
						t.Fatalf("page %d holds samples of shards %d and %d", ptr/r.PageSize(), prev, k)
					}
					shardOfPage[ptr/r.PageSize()] = k
					got := make([]byte, size)
					if _, err := r.ReadAt(got, int64(ptr)); err != nil || !bytes.Equal(got, heap) {
						t.Fatalf("sample %d field %d: ReadAt differs (%v)", i, f, err)
					}
				}
			}
			for e := uint64(0); e < r.NumAllocs(); e++ {
				a := r.Alloc(e)
				if k, _ := r.ShardOf(a.SampleID); a.Ptr < r.spans[k].heapStart || a.Ptr+a.Size > r.spans[k].heapEnd {
					t.Fatalf("allocation %d of sample %d outside its shard %d", e, a.SampleID, k)
				}
			}
			if r.NumAllocs() != whole.NumAllocs() {
				t.Fatalf("%d allocations, the single file has %d", r.NumAllocs(), whole.NumAllocs())
			}
			if _, _, err := r.AllocIndex(); err != nil {
				t.Fatal(err)
			}
			for p := range shardOfPage {
				start, end, err := r.PageRange(p)
				if err != nil || end-start > r.PageSize() || end > r.spans[shardOfPage[p]].heapEnd {
					t.Fatalf("page %d: range [%d, %d) (%v)", p, start, end, err)
				}
			}
		})
	}
}

// TestJoinThroughReaderAt: shards opened with OpenAt join into a reader
// without a map whose ReadAt reaches every shard.
func TestJoinThroughReaderAt(t *testing.T) {
	mapped, whole := openShards(t, []int{6, 0, 9}, 5000)
	var shards []*Reader
	for _, s := range mapped {
		raw, err := os.ReadFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := OpenAt(s.Path, bytes.NewReader(raw), int64(len(raw)), nil)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, r)
		s.Close()
	}
	r, err := Join("remote", shards)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Mapped() {
		t.Fatal("joined OpenAt shards claim a map")
	}
	if _, err := r.Data(); !errors.Is(err, ErrNotMapped) {
		t.Fatalf("Data: %v", err)
	}
	for i := uint64(0); i < r.NumSamples(); i++ {
		_, ptr, size, ok, err := r.Locate(i, 0)
		_, want, _ := whole.Read(i, 0)
		got := make([]byte, size)
		if !ok || err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if _, err := r.ReadAt(got, int64(ptr)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("sample %d: ReadAt differs (%v)", i, err)
		}
	}
}

// TestJoinRefuses: shards whose fields or page sizes differ, or with custom
// fields, are refused with an error naming the file and the field.
func TestJoinRefuses(t *testing.T) {
	other := func(edit func([]field.Desc) []field.Desc) []field.Desc {
		d := append([]field.Desc{}, shardFields...)
		return edit(d)
	}
	cases := []struct {
		name     string
		descs    []field.Desc
		pageSize uint64
		want     string
	}{
		{"type", other(func(d []field.Desc) []field.Desc { d[1] = field.Desc{Type: field.Float, Name: "label"}; return d }), MinPageSize, `field 1 is "label" (FloatField), `},
		{"name", other(func(d []field.Desc) []field.Desc { d[1] = field.Desc{Type: field.Int, Name: "target"}; return d }), MinPageSize, `"target"`},
		{"dtype and shape", other(func(d []field.Desc) []field.Desc {
			d[2] = field.Desc{Type: field.NDArray, Name: "arr", DType: "<u1", Shape: []uint64{12}}
			return d
		}), MinPageSize, `field 2 is "arr" (NDArrayField <u1 [12])`},
		{"fewer fields", shardFields[:2], MinPageSize, `no field 2 ("arr"`},
		{"page size", shardFields, 2 * MinPageSize, "page size 4194304"},
	}
	dir := t.TempDir()
	first, err := Open(writeRows(t, filepath.Join(dir, "a.beton"), shardFields, 0, 4, 100, MinPageSize), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	for _, c := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".beton")
		b, err := Open(writeRows(t, p, c.descs, 4, 3, 100, c.pageSize), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Join("ds", []*Reader{first, b})
		if !errors.Is(err, ErrShards) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
		b.Close()
	}
	if _, err := Join("ds", nil); !errors.Is(err, ErrShards) {
		t.Errorf("no shards: %v", err)
	}
}

// TestJoinCustomFields: pointers of custom fields cannot be moved, so
// several shards with one are refused; one shard is read as it is.
func TestJoinCustomFields(t *testing.T) {
	dir := t.TempDir()
	col := field.Column{Size: 16, Align: 8}
	descs := []field.Desc{{Type: field.Custom, Name: "c", Args: make([]byte, 1024)}}
	var shards []*Reader
	for k := 0; k < 2; k++ {
		p := filepath.Join(dir, fmt.Sprintf("c%d.beton", k))
		w, err := Create(p, descs, []field.Encoder{field.NewCustomEncoder("c", col)}, 2, WriterOptions{PageSize: MinPageSize, Workers: 1, Custom: map[string]field.Column{"c": col}})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if err := w.Put(uint64(i), []field.Value{{Column: make([]byte, 16), Data: []byte("xyz"), PtrOffset: 0}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(p, map[string]field.Column{"c": col})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		shards = append(shards, r)
	}
	if _, err := Join("ds", shards); !errors.Is(err, ErrShards) || !strings.Contains(err.Error(), `custom field`) {
		t.Fatalf("custom fields: %v", err)
	}
}

// TestJoinCorruptPointer: a pointer past its shard's end is an error, never
// bytes of the next shard.
func TestJoinCorruptPointer(t *testing.T) {
	dir := t.TempDir()
	a := writeRows(t, filepath.Join(dir, "a.beton"), shardFields[:1], 0, 3, 100, MinPageSize)
	b := writeRows(t, filepath.Join(dir, "b.beton"), shardFields[:1], 3, 3, 100, MinPageSize)
	raw, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	ra, err := Open(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	off := ra.MetadataOffset()
	ra.Close()
	// Sample 0's blob points 2 MiB + 100 bytes on: past a.beton, where b's heap lies once joined.
	binary.LittleEndian.PutUint64(raw[off:], MinPageSize+2*MinPageSize+100)
	if err := os.WriteFile(a, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var shards []*Reader
	for _, p := range []string{a, b} {
		r, err := Open(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, r)
	}
	r, err := Join("ds", shards)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, err := r.Read(0, 0); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "shard "+a) {
		t.Fatalf("corrupt pointer: %v", err)
	}
	if _, _, err := r.Read(4, 0); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRead is the per-sample cost of finding and checking a sample's
// heap bytes (Read) in one mapped file and in the same rows as four joined
// shards: go test -run '^$' -bench Read ./core/beton
func BenchmarkRead(b *testing.B) {
	shards, whole := openShards(b, []int{250, 250, 250, 250}, 2000)
	joined, err := Join("ds", shards)
	if err != nil {
		b.Fatal(err)
	}
	defer joined.Close()
	for _, c := range []struct {
		name string
		r    *Reader
	}{{"one file", whole}, {"4 shards", joined}} {
		b.Run(c.name, func(b *testing.B) {
			n := c.r.NumSamples()
			for i := 0; b.Loop(); i++ {
				if _, _, err := c.r.Read(uint64(i)%n, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
