// Package litdata reads Lightning's litdata datasets (litdata.optimize,
// BinaryWriter): a directory (local or remote) holding index.json, which
// lists the chunk files and how an item is serialized (its pytree of
// leaves, each with a serializer name: "jpeg", "int", "str", ...), and the
// chunks, each a table of items. Chunks compressed with zstd are read at
// each of litdata's compression levels (chunk: the whole file; batch:
// frames of items; sample: each item); encryption is refused by name. The
// package hands out each item's raw leaf bytes.
package litdata

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Chunk is one chunk file of the index.
type Chunk struct {
	Filename string `json:"filename"`
	Items    int    `json:"chunk_size"`
	Bytes    int64  `json:"chunk_bytes"`
}

// Index is a parsed index.json: the chunks, and the name and serializer
// of every leaf of an item, in the order they are stored.
type Index struct {
	Chunks []Chunk
	Leaves []string // "image", "meta.caption", "0" (a tuple's first)
	Format []string // each leaf's serializer: "jpeg", "int", "no_header_numpy:10", ...
	level  string   // zstd compression: "" (none), "chunk", "batch" or "sample"
}

type indexJSON struct {
	Chunks []Chunk `json:"chunks"`
	Config *struct {
		Compression      *string         `json:"compression"`
		CompressionLevel *string         `json:"compression_level"`
		DataFormat       []string        `json:"data_format"`
		DataSpec         string          `json:"data_spec"`
		Encryption       json.RawMessage `json:"encryption"`
		ItemLoader       string          `json:"item_loader"`
	} `json:"config"`
}

// ParseIndex reads an index.json.
func ParseIndex(b []byte) (*Index, error) {
	var ix indexJSON
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("index.json: not a litdata index: %v", err)
	}
	c := ix.Config
	if c == nil {
		return nil, fmt.Errorf("index.json: no config: not a litdata index")
	}
	if c.ItemLoader != "PyTreeLoader" {
		return nil, fmt.Errorf("index.json: items of the %s are not read (only PyTreeLoader's, the default)", c.ItemLoader)
	}
	if len(c.Encryption) > 0 && string(c.Encryption) != "null" {
		return nil, fmt.Errorf("index.json: an encrypted dataset is not read")
	}
	out := &Index{Chunks: ix.Chunks, Format: c.DataFormat}
	if c.Compression != nil && *c.Compression != "" {
		algo, _, _ := strings.Cut(*c.Compression, ":")
		if algo != "zstd" {
			return nil, fmt.Errorf("index.json: compression %q is not read (zstd is)", *c.Compression)
		}
		out.level = "chunk" // litdata's before compression levels
		if c.CompressionLevel != nil && *c.CompressionLevel != "" {
			out.level = *c.CompressionLevel
		}
		if out.level != "chunk" && out.level != "batch" && out.level != "sample" {
			return nil, fmt.Errorf("index.json: unknown compression_level %q", out.level)
		}
	}
	var spec []json.RawMessage
	if err := json.Unmarshal([]byte(c.DataSpec), &spec); err != nil || len(spec) != 2 {
		return nil, fmt.Errorf("index.json: data_spec is not a pytree spec: %.80q", c.DataSpec)
	}
	var root treeSpec
	if err := json.Unmarshal(spec[1], &root); err != nil {
		return nil, fmt.Errorf("index.json: data_spec: %v", err)
	}
	if err := root.leaves("", &out.Leaves); err != nil {
		return nil, fmt.Errorf("index.json: data_spec: %w", err)
	}
	if len(out.Leaves) != len(out.Format) {
		return nil, fmt.Errorf("index.json: %d leaves in data_spec, %d in data_format", len(out.Leaves), len(out.Format))
	}
	for k, ch := range out.Chunks {
		if ch.Filename == "" || ch.Filename == ".." || strings.ContainsAny(ch.Filename, `/\`) {
			return nil, fmt.Errorf("index.json: chunk %d: file name %q is not a plain name in the dataset's directory", k, ch.Filename)
		}
	}
	return out, nil
}

// treeSpec is a node of torch's pytree spec as litdata stores it.
type treeSpec struct {
	Type     *string    `json:"type"`
	Context  *string    `json:"context"`
	Children []treeSpec `json:"children_spec"`
}

// leaves appends the names of n's leaves: dict keys and sequence indices,
// joined by dots.
func (n *treeSpec) leaves(prefix string, out *[]string) error {
	if n.Type == nil {
		name := prefix
		if name == "" {
			name = "0" // an item that is a single value
		}
		*out = append(*out, name)
		return nil
	}
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch *n.Type {
	case "builtins.dict", "collections.OrderedDict":
		var keys []any
		if n.Context == nil || json.Unmarshal([]byte(*n.Context), &keys) != nil || len(keys) != len(n.Children) {
			return fmt.Errorf("a dict whose keys cannot be read")
		}
		for k, c := range n.Children {
			if err := c.leaves(join(fmt.Sprint(keys[k])), out); err != nil {
				return err
			}
		}
	case "builtins.tuple", "builtins.list":
		for k, c := range n.Children {
			if err := c.leaves(join(strconv.Itoa(k)), out); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("items of type %s are not read (dicts, tuples and lists are)", *n.Type)
	}
	return nil
}

// Decompress returns a chunk file's bytes as an uncompressed chunk.
func (ix *Index) Decompress(b []byte) ([]byte, error) {
	if ix.level == "" {
		return b, nil
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var out []byte
	switch ix.level {
	case "chunk":
		out, err = d.DecodeAll(b, nil)
	case "batch":
		out, err = unframe(d, b)
	case "sample":
		out, err = unpackItems(d, b)
	}
	if err != nil {
		return nil, fmt.Errorf("zstd (compression_level %s): %w", ix.level, err)
	}
	return out, nil
}

// classic lays items out as an uncompressed chunk: their count, their
// offsets in the chunk, their bytes.
func classic(items [][]byte) []byte {
	n := len(items)
	head := 4 + 4*(n+1)
	size := head
	for _, it := range items {
		size += len(it)
	}
	out := make([]byte, head, size)
	binary.LittleEndian.PutUint32(out, uint32(n))
	at := head
	for i, it := range items {
		binary.LittleEndian.PutUint32(out[4+4*i:], uint32(at))
		at += len(it)
		out = append(out, it...)
	}
	binary.LittleEndian.PutUint32(out[4+4*n:], uint32(at))
	return out
}

// unpackItems reads compression_level "sample": an uncompressed chunk
// whose every item is a zstd frame.
func unpackItems(d *zstd.Decoder, b []byte) ([]byte, error) {
	n, err := Items(b)
	if err != nil {
		return nil, err
	}
	if 4+4*(n+1) > len(b) {
		return nil, fmt.Errorf("%d items: the offset table runs past the chunk's end", n)
	}
	items := make([][]byte, n)
	for i := range items {
		begin, end := binary.LittleEndian.Uint32(b[4+4*i:]), binary.LittleEndian.Uint32(b[4+4*(i+1):])
		if begin > end || int(end) > len(b) {
			return nil, fmt.Errorf("item %d: bytes [%d, %d) of a %d-byte chunk", i, begin, end, len(b))
		}
		if items[i], err = d.DecodeAll(b[begin:end], nil); err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
	}
	return classic(items), nil
}

// framedMagic starts a chunk of compression_level "batch": a header, the
// items' offsets in their concatenated bytes, a table of zstd frames each
// holding the bytes of consecutive items, and the frames.
var framedMagic = []byte("LDFZ01\x00\x00")

func unframe(d *zstd.Decoder, b []byte) ([]byte, error) {
	const prefix, frameRow = 24, 24
	if len(b) < prefix || string(b[:8]) != string(framedMagic) {
		return nil, fmt.Errorf("not a framed chunk (no LDFZ01 magic)")
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != 1 {
		return nil, fmt.Errorf("framed chunk version %d", v)
	}
	n, frames := int(binary.LittleEndian.Uint32(b[12:])), int(binary.LittleEndian.Uint32(b[20:]))
	offEnd := prefix + 4*(n+1)
	tableEnd := offEnd + frameRow*frames
	if n <= 0 || frames <= 0 || tableEnd > len(b) {
		return nil, fmt.Errorf("a framed chunk of %d items in %d frames cut short", n, frames)
	}
	var body []byte
	for k := range frames {
		row := b[offEnd+frameRow*k:]
		off, clen := binary.LittleEndian.Uint64(row[8:]), uint64(binary.LittleEndian.Uint32(row[16:]))
		if off+clen > uint64(len(b)) {
			return nil, fmt.Errorf("frame %d runs past the chunk's end", k)
		}
		var err error
		if body, err = d.DecodeAll(b[off:off+clen], body); err != nil {
			return nil, fmt.Errorf("frame %d: %w", k, err)
		}
	}
	items := make([][]byte, n)
	for i := range items {
		begin := binary.LittleEndian.Uint32(b[prefix+4*i:])
		end := binary.LittleEndian.Uint32(b[prefix+4*(i+1):])
		if begin > end || int(end) > len(body) {
			return nil, fmt.Errorf("item %d: bytes [%d, %d) of %d decompressed bytes", i, begin, end, len(body))
		}
		items[i] = body[begin:end]
	}
	return classic(items), nil
}

// Items returns the number of items of a chunk's (decompressed) bytes.
func Items(data []byte) (int, error) {
	if len(data) < 4 {
		return 0, fmt.Errorf("%d bytes: not a litdata chunk", len(data))
	}
	return int(binary.LittleEndian.Uint32(data)), nil
}

// Item returns item i of a chunk's (decompressed) bytes: one slice per
// leaf, into data.
func (ix *Index) Item(data []byte, i int) ([][]byte, error) {
	n, err := Items(data)
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= n || 4+4*(i+2) > len(data) {
		return nil, fmt.Errorf("item %d: past the offset table", i)
	}
	begin := int(binary.LittleEndian.Uint32(data[4+4*i:]))
	end := int(binary.LittleEndian.Uint32(data[4+4*(i+1):]))
	if begin > end || end > len(data) {
		return nil, fmt.Errorf("item %d: bytes [%d, %d) of a %d-byte chunk", i, begin, end, len(data))
	}
	b := data[begin:end]
	head := 4 * len(ix.Leaves)
	if len(b) < head {
		return nil, fmt.Errorf("item %d: %d bytes, cut short in its header of %d leaf sizes", i, len(b), len(ix.Leaves))
	}
	out := make([][]byte, len(ix.Leaves))
	at := head
	for k := range ix.Leaves {
		size := int(binary.LittleEndian.Uint32(b[4*k:]))
		if size > len(b)-at {
			return nil, fmt.Errorf("item %d: leaf %q of %d bytes runs past the item's end", i, ix.Leaves[k], size)
		}
		out[k] = b[at : at+size : at+size]
		at += size
	}
	return out, nil
}
