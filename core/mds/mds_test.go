package mds

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func shardJSON(fields string) string {
	return `{"version": 2, "shards": [{"version": 2, "format": "mds", "column_names": ["a", "b"],
		"column_encodings": ["int", "str"], "column_sizes": [8, null], "samples": 2,
		"raw_data": {"basename": "shard.00000.mds", "bytes": 10}` + fields + `}]}`
}

func TestParseIndexRefuses(t *testing.T) {
	cases := []struct{ name, index, want string }{
		{"not JSON", `{`, "not an MDS index"},
		{"version", `{"version": 1, "shards": []}`, "version 1, not MDS version 2"},
		{"csv shards", strings.Replace(shardJSON(""), `"format": "mds"`, `"format": "csv"`, 1), `format "csv"`},
		{"columns", strings.Replace(shardJSON(""), `[8, null]`, `[8]`, 1), "2 column names, 2 encodings, 1 sizes"},
		{"a path out of the directory", strings.Replace(shardJSON(""), `"shard.00000.mds"`, `"../x.mds"`, 1), "a file name that leaves the dataset's directory"},
		{"an absolute path", strings.Replace(shardJSON(""), `"shard.00000.mds"`, `"/etc/x.mds"`, 1), "leaves the dataset's directory"},
		{"brotli", shardJSON(`, "compression": "br:5", "zip_data": {"basename": "s.mds.br", "bytes": 3}`), "brotli-compressed shards (br:5) are not read"},
		{"unknown compression", shardJSON(`, "compression": "lzma", "zip_data": {"basename": "s.mds.xz", "bytes": 3}`), `unknown compression "lzma"`},
		{"compressed without its file", shardJSON(`, "compression": "zstd"`), "compressed with zstd but no zip_data file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseIndex([]byte(c.index))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// shard lays out an MDS shard of samples (a fixed 8-byte column, then a
// variable one) as MDSWriter does: count, offsets, samples (each the
// variable column's size, then the columns).
func shard(values ...string) []byte {
	n := len(values)
	head := 4 + 4*(n+1)
	out := binary.LittleEndian.AppendUint32(nil, uint32(n))
	var body []byte
	offs := []uint32{uint32(head)}
	for i, v := range values {
		body = binary.LittleEndian.AppendUint32(body, uint32(len(v)))
		body = binary.LittleEndian.AppendUint64(body, uint64(i))
		body = append(body, v...)
		offs = append(offs, uint32(head+len(body)))
	}
	for _, o := range offs {
		out = binary.LittleEndian.AppendUint32(out, o)
	}
	return append(out, body...)
}

// TestMergedIndex: Streaming's merge_index names shards below the
// dataset's directory.
func TestMergedIndex(t *testing.T) {
	ix, err := ParseIndex([]byte(strings.Replace(shardJSON(""), `"shard.00000.mds"`, `"part-1/shard.00000.mds"`, 1)))
	if err != nil || ix[0].File() != "part-1/shard.00000.mds" {
		t.Fatalf("%v, %v", ix, err)
	}
}

func TestSample(t *testing.T) {
	ix, err := ParseIndex([]byte(shardJSON("")))
	if err != nil {
		t.Fatal(err)
	}
	s := &ix[0]
	data := shard("x", "hello")
	for i, want := range []string{"x", "hello"} {
		cols, err := s.Sample(data, i)
		if err != nil || binary.LittleEndian.Uint64(cols[0]) != uint64(i) || string(cols[1]) != want {
			t.Fatalf("sample %d: %q, %v", i, cols, err)
		}
	}
	for _, c := range []struct {
		name string
		data []byte
		i    int
		want string
	}{
		{"cut short", data[:len(data)-2], 1, "bytes [29, 46) of a 44-byte shard"},
		{"past the table", data, 2, "sample 2: past the offset table"},
		{"another count", shard("x"), 0, "1 samples, the index says 2"},
		{"a column past the end", func() []byte { d := shard("x", "hello"); d[29] = 200; return d }(), 1, `column "b" of 200 bytes runs past`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := s.Sample(c.data, c.i); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestDecompress: Streaming's zstd and gz shards (tests/fixtures/peers)
// decompress to their raw size.
func TestDecompress(t *testing.T) {
	for _, dir := range []string{"mds-zstd", "mds-gz"} {
		root := filepath.Join("..", "..", "tests", "fixtures", "peers", dir)
		b, err := os.ReadFile(filepath.Join(root, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		ix, err := ParseIndex(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ix {
			z, err := os.ReadFile(filepath.Join(root, s.File()))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := s.Decompress(z)
			if err != nil || int64(len(raw)) != s.Raw.Bytes {
				t.Fatalf("%s: %d bytes, want %d (%v)", s.File(), len(raw), s.Raw.Bytes, err)
			}
			if _, err := s.Decompress(z[:len(z)/2]); err == nil {
				t.Fatalf("%s cut short decompressed", s.File())
			}
		}
	}
}
