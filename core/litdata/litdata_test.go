package litdata

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var peers = filepath.Join("..", "..", "tests", "fixtures", "peers")

func index(config string) string {
	return `{"chunks": [{"filename": "chunk-0-0.bin", "chunk_size": 1, "chunk_bytes": 10}], "config": {` + config + `}}`
}

const dictSpec = `"data_spec": "[1, {\"type\": \"builtins.dict\", \"context\": \"[\\\"image\\\", \\\"meta\\\"]\", \"children_spec\": [{\"type\": null, \"context\": null, \"children_spec\": []}, {\"type\": \"builtins.tuple\", \"context\": null, \"children_spec\": [{\"type\": null, \"context\": null, \"children_spec\": []}, {\"type\": null, \"context\": null, \"children_spec\": []}]}]}]"`

func TestParseIndex(t *testing.T) {
	ix, err := ParseIndex([]byte(index(`"item_loader": "PyTreeLoader", "data_format": ["jpeg", "int", "str"], ` + dictSpec)))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ix.Leaves, " "); got != "image meta.0 meta.1" {
		t.Fatalf("leaves %q", got)
	}
	cases := []struct{ name, index, want string }{
		{"not JSON", `[`, "not a litdata index"},
		{"no config", `{"chunks": []}`, "no config"},
		{"tokens", index(`"item_loader": "TokensLoader"`), "items of the TokensLoader are not read"},
		{"encrypted", index(`"item_loader": "PyTreeLoader", "encryption": {"level": "chunk"}`), "an encrypted dataset is not read"},
		{"compression", index(`"item_loader": "PyTreeLoader", "compression": "lz4"`), `compression "lz4" is not read`},
		{"level", index(`"item_loader": "PyTreeLoader", "compression": "zstd", "compression_level": "row"`), `unknown compression_level "row"`},
		{"leaves", index(`"item_loader": "PyTreeLoader", "data_format": ["jpeg"], ` + dictSpec), "3 leaves in data_spec, 1 in data_format"},
		{"a path out of the directory", strings.Replace(index(`"item_loader": "PyTreeLoader", "data_format": ["jpeg", "int", "str"], `+dictSpec), "chunk-0-0.bin", "../x.bin", 1), "not a plain name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseIndex([]byte(c.index)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestCompressionLevels: the chunks litdata wrote with zstd at each level
// (batch, its default: frames of items; chunk: the whole file; sample:
// each item), rebuilt as plain chunks, hold the items it wrote uncompressed.
func TestCompressionLevels(t *testing.T) {
	read := func(dir string) [][][]byte {
		b, err := os.ReadFile(filepath.Join(peers, dir, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		ix, err := ParseIndex(b)
		if err != nil {
			t.Fatal(err)
		}
		var out [][][]byte
		for _, ch := range ix.Chunks {
			raw, err := os.ReadFile(filepath.Join(peers, dir, ch.Filename))
			if err != nil {
				t.Fatal(err)
			}
			data, err := ix.Decompress(raw)
			if err != nil {
				t.Fatalf("%s/%s: %v", dir, ch.Filename, err)
			}
			for i := range ch.Items {
				leaves, err := ix.Item(data, i)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, leaves)
			}
			if ix.level != "" {
				if _, err := ix.Decompress(raw[:len(raw)-5]); err == nil {
					t.Fatalf("%s/%s cut short decompressed", dir, ch.Filename)
				}
			}
		}
		return out
	}
	plain := read("litdata")
	for _, dir := range []string{"litdata-zstd", "litdata-zstd-chunk", "litdata-zstd-sample"} {
		got := read(dir)
		if len(plain) != len(got) || len(plain) == 0 {
			t.Fatalf("%s: %d and %d items", dir, len(plain), len(got))
		}
		for i := range plain {
			for k := range plain[i] {
				if !bytes.Equal(plain[i][k], got[i][k]) {
					t.Fatalf("%s: item %d, leaf %d differs", dir, i, k)
				}
			}
		}
	}
	// compression_level "sample": each item a zstd frame of its own.
	ix := &Index{Leaves: []string{"a"}, level: "sample"}
	if _, err := ix.Decompress(classic([][]byte{[]byte("not zstd")})); err == nil || !strings.Contains(err.Error(), "item 0") {
		t.Fatalf("got %v", err)
	}
}
