package ingest

import (
	"fmt"
	"strings"

	"github.com/ffcv-go/ffcv-go/core/litdata"
	"github.com/ffcv-go/ffcv-go/core/mds"
	"github.com/ffcv-go/ffcv-go/core/remote"
)

// MDSSources reads the index.json of the MosaicML Streaming (MDS) dataset
// in directory root (a path, or an s3:// or http(s):// URL prefix) and
// returns a source per shard, each read (and decompressed) when first read.
func (c *Columns) MDSSources(root string) ([]Source, error) {
	b, err := readFile(inDir(root, "index.json"), c.Remote)
	if err != nil {
		return nil, fmt.Errorf("%s: an MDS dataset's index: %w", remote.Redact(root), err)
	}
	shards, err := mds.ParseIndex(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", remote.Redact(root), err)
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("%s: index.json lists no shards", remote.Redact(root))
	}
	out := make([]Source, len(shards))
	for k := range shards {
		sh := &shards[k]
		name := inDir(root, sh.File())
		var cols []Col
		for _, col := range sh.Columns {
			cols = append(cols, Col{Name: col.Name, Encoding: mdsEncoding(col.Encoding)})
		}
		if _, err := c.columns(cols); err != nil { // a mapping that cannot work fails before any sample
			return nil, fmt.Errorf("%s: %w", remote.Redact(name), err)
		}
		out[k] = c.Source(name, func() (*Table, error) {
			raw, err := readFile(name, c.Remote)
			if err != nil {
				return nil, err
			}
			data, err := sh.Decompress(raw)
			if err != nil {
				return nil, err
			}
			return &Table{Cols: cols, Rows: sh.Samples, Row: func(i int) ([][]byte, error) { return sh.Sample(data, i) }}, nil
		})
	}
	return out, nil
}

// mdsEncoding is an MDS encoding in Columns' vocabulary.
func mdsEncoding(e string) string {
	if e == "int" {
		return "int64"
	}
	return e
}

// LitdataSources reads the index.json of the litdata dataset in directory
// root (a path, or an s3:// or http(s):// URL prefix) and returns a source
// per chunk, each read (and decompressed) when first read. The columns are
// the item's leaves: a dict's keys ("image"), a tuple's indices ("0"),
// dotted for nested items ("meta.caption").
func (c *Columns) LitdataSources(root string) ([]Source, error) {
	b, err := readFile(inDir(root, "index.json"), c.Remote)
	if err != nil {
		return nil, fmt.Errorf("%s: a litdata dataset's index: %w", remote.Redact(root), err)
	}
	ix, err := litdata.ParseIndex(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", remote.Redact(root), err)
	}
	if len(ix.Chunks) == 0 {
		return nil, fmt.Errorf("%s: index.json lists no chunks", remote.Redact(root))
	}
	cols := make([]Col, len(ix.Leaves))
	for k, leaf := range ix.Leaves {
		cols[k] = Col{Name: leaf, Encoding: litdataEncoding(ix.Format[k])}
	}
	if _, err := c.columns(cols); err != nil { // a mapping that cannot work fails before any sample
		return nil, fmt.Errorf("%s: %w", remote.Redact(root), err)
	}
	out := make([]Source, len(ix.Chunks))
	for k := range ix.Chunks {
		ch := ix.Chunks[k]
		name := inDir(root, ch.Filename)
		out[k] = c.Source(name, func() (*Table, error) {
			raw, err := readFile(name, c.Remote)
			if err != nil {
				return nil, err
			}
			data, err := ix.Decompress(raw)
			if err != nil {
				return nil, err
			}
			n, err := litdata.Items(data)
			if err != nil {
				return nil, err
			}
			if n != ch.Items {
				return nil, fmt.Errorf("%d items, the index says %d", n, ch.Items)
			}
			return &Table{Cols: cols, Rows: n, Row: func(i int) ([][]byte, error) { return ix.Item(data, i) }}, nil
		})
	}
	return out, nil
}

// litdataEncoding is a litdata serializer name in Columns' vocabulary.
func litdataEncoding(e string) string {
	switch {
	case e == "int":
		return "int64"
	case e == "float":
		return "float64"
	case strings.HasPrefix(e, "image:"):
		return "image"
	case e == "json":
		return "litdata-json" // litdata's own binary form, not JSON text
	}
	return e
}
