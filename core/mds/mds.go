// Package mds reads MosaicML Streaming's MDS datasets: a directory (local
// or remote) holding index.json, which lists the shards and their columns,
// and the shards, each a table of samples whose columns are typed by an
// encoding ("jpeg", "int", "str", ...). Shards may be compressed (zstd,
// gz, bz2, snappy; brotli is refused by name). The package hands out each
// sample's raw column bytes; what they mean is the caller's to decide.
package mds

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// Column is one column of a shard: its name, its encoding and its fixed
// size in bytes (0: each sample gives its size).
type Column struct {
	Name     string
	Encoding string
	Size     int
}

// File is a shard file as the index lists it.
type File struct {
	Basename string `json:"basename"`
	Bytes    int64  `json:"bytes"`
}

// Shard is one shard of the index.
type Shard struct {
	Columns     []Column
	Samples     int
	Raw         File
	Zip         *File  // the compressed file, when Compression is set
	Compression string // "" or e.g. "zstd", "zstd:7", "gz"
}

// File is the file to read: the compressed one if any.
func (s *Shard) File() string {
	if s.Zip != nil {
		return s.Zip.Basename
	}
	return s.Raw.Basename
}

type indexJSON struct {
	Version int `json:"version"`
	Shards  []struct {
		Version     int      `json:"version"`
		Format      string   `json:"format"`
		Names       []string `json:"column_names"`
		Encodings   []string `json:"column_encodings"`
		Sizes       []*int   `json:"column_sizes"`
		Samples     int      `json:"samples"`
		Compression *string  `json:"compression"`
		RawData     *File    `json:"raw_data"`
		ZipData     *File    `json:"zip_data"`
	} `json:"shards"`
}

// ParseIndex reads an index.json.
func ParseIndex(b []byte) ([]Shard, error) {
	var ix indexJSON
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("index.json: not an MDS index: %v", err)
	}
	if ix.Version != 2 {
		return nil, fmt.Errorf("index.json: version %d, not MDS version 2", ix.Version)
	}
	out := make([]Shard, len(ix.Shards))
	for k, s := range ix.Shards {
		where := fmt.Sprintf("index.json: shard %d", k)
		if s.Format != "mds" {
			return nil, fmt.Errorf("%s: format %q: only MDS shards are read (Streaming's csv, tsv and json shards are not)", where, s.Format)
		}
		if len(s.Names) != len(s.Encodings) || len(s.Names) != len(s.Sizes) {
			return nil, fmt.Errorf("%s: %d column names, %d encodings, %d sizes", where, len(s.Names), len(s.Encodings), len(s.Sizes))
		}
		if s.RawData == nil || s.RawData.Basename == "" {
			return nil, fmt.Errorf("%s: no raw_data file", where)
		}
		if !plainName(s.RawData.Basename) || s.ZipData != nil && !plainName(s.ZipData.Basename) {
			return nil, fmt.Errorf("%s: a file name that leaves the dataset's directory", where)
		}
		sh := Shard{Samples: s.Samples, Raw: *s.RawData}
		if s.Compression != nil && *s.Compression != "" {
			sh.Compression = *s.Compression
			if s.ZipData == nil || s.ZipData.Basename == "" {
				return nil, fmt.Errorf("%s: compressed with %s but no zip_data file", where, sh.Compression)
			}
			if err := checkAlgo(sh.Compression); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			sh.Zip = s.ZipData
		}
		for c, n := range s.Names {
			col := Column{Name: n, Encoding: s.Encodings[c]}
			if s.Sizes[c] != nil {
				col.Size = *s.Sizes[c]
				if col.Size <= 0 {
					return nil, fmt.Errorf("%s: column %q: size %d", where, n, col.Size)
				}
			}
			sh.Columns = append(sh.Columns, col)
		}
		out[k] = sh
	}
	return out, nil
}

// plainName accepts a file name in the dataset's directory or below it
// (Streaming's merge_index names shards "part/shard.00000.mds"), and
// refuses names that would leave it.
func plainName(n string) bool {
	if n == "" || strings.HasPrefix(n, "/") || strings.Contains(n, `\`) {
		return false
	}
	for _, part := range strings.Split(n, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

func algo(compression string) string {
	a, _, _ := strings.Cut(compression, ":")
	return a
}

func checkAlgo(compression string) error {
	switch algo(compression) {
	case "zstd", "gz", "bz2", "snappy":
		return nil
	case "br":
		return fmt.Errorf("brotli-compressed shards (%s) are not read: rewrite the dataset with compression='zstd' or none", compression)
	}
	return fmt.Errorf("unknown compression %q", compression)
}

// Decompress returns the shard file's bytes as written: b itself, or b
// decompressed.
func (s *Shard) Decompress(b []byte) ([]byte, error) {
	if s.Zip == nil {
		return b, nil
	}
	var r io.Reader
	switch algo(s.Compression) {
	case "zstd":
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		out, err := d.DecodeAll(b, make([]byte, 0, max(s.Raw.Bytes, 0)))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return out, nil
	case "snappy":
		out, err := snappy.Decode(nil, b)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		return out, nil
	case "gz":
		g, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		r = g
	case "bz2":
		r = bzip2.NewReader(bytes.NewReader(b))
	default:
		return nil, checkAlgo(s.Compression)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", algo(s.Compression), err)
	}
	return out, nil
}

// Sample returns sample i of the shard's (decompressed) bytes data: one
// slice per column, into data.
func (s *Shard) Sample(data []byte, i int) ([][]byte, error) {
	n := len(data)
	if n < 4 {
		return nil, fmt.Errorf("%d bytes: not an MDS shard", n)
	}
	if got := int(binary.LittleEndian.Uint32(data)); got != s.Samples {
		return nil, fmt.Errorf("%d samples, the index says %d", got, s.Samples)
	}
	if i < 0 || i >= s.Samples || 4+4*(i+2) > n {
		return nil, fmt.Errorf("sample %d: past the offset table", i)
	}
	begin := int(binary.LittleEndian.Uint32(data[4+4*i:]))
	end := int(binary.LittleEndian.Uint32(data[4+4*(i+1):]))
	if begin > end || end > n {
		return nil, fmt.Errorf("sample %d: bytes [%d, %d) of a %d-byte shard", i, begin, end, n)
	}
	b := data[begin:end]
	sizes := make([]int, len(s.Columns))
	at := 0
	for c, col := range s.Columns {
		if col.Size > 0 {
			sizes[c] = col.Size
			continue
		}
		if at+4 > len(b) {
			return nil, fmt.Errorf("sample %d: cut short in its column sizes", i)
		}
		sizes[c] = int(binary.LittleEndian.Uint32(b[at:]))
		at += 4
	}
	out := make([][]byte, len(s.Columns))
	for c, size := range sizes {
		if size > len(b)-at {
			return nil, fmt.Errorf("sample %d: column %q of %d bytes runs past the sample's end", i, s.Columns[c].Name, size)
		}
		out[c] = b[at : at+size : at+size]
		at += size
	}
	return out, nil
}
