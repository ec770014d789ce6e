package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// peers is where tests/fixtures/peers/make_fixtures.py wrote datasets
// with MosaicML Streaming and litdata themselves.
var peers = filepath.Join("..", "..", "tests", "fixtures", "peers")

type truthSample struct {
	JPEG    string  `json:"jpeg_sha256"`
	Label   int64   `json:"label"`
	Caption string  `json:"caption"`
	Raw     string  `json:"raw"`
	Score   float64 `json:"score"`
}

func truth(t *testing.T) []truthSample {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(peers, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []truthSample
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// readAll returns the items of sources, in order.
func readAll(t *testing.T, sources []Source) []*Item {
	t.Helper()
	var out []*Item
	for _, s := range sources {
		for {
			it, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
			out = append(out, it)
		}
		s.Close()
	}
	return out
}

// TestTables reads every fixture (plain and compressed MDS shards, plain
// and zstd litdata chunks) and finds the samples the tools were given:
// the JPEG files byte for byte, the labels, captions, bytes and scores.
func TestTables(t *testing.T) {
	want := truth(t)
	fields := []field.Desc{{Type: field.RGBImage, Name: "image"}, {Type: field.Int, Name: "label"},
		{Type: field.Text, Name: "caption"}, {Type: field.Bytes, Name: "raw"}, {Type: field.Float, Name: "label_f"}}
	for _, c := range []struct{ dir, format string }{
		{"mds", "mds"}, {"mds-zstd", "mds"}, {"mds-gz", "mds"}, {"litdata", "litdata"}, {"litdata-zstd", "litdata"},
		{"litdata-zstd-chunk", "litdata"}, {"litdata-zstd-sample", "litdata"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			cols := &Columns{Fields: fields, Take: []string{"image", "label", "caption", "raw", "label"}}
			if err := cols.Check(); err != nil {
				t.Fatal(err)
			}
			sources, err := tableSources(cols, c.format, filepath.Join(peers, c.dir))
			if err != nil {
				t.Fatal(err)
			}
			items := readAll(t, sources)
			if len(sources) < 3 || len(items) != len(want) {
				t.Fatalf("%d sources, %d items; want several sources and %d items", len(sources), len(items), len(want))
			}
			for i, it := range items {
				w := want[i]
				sum := sha256.Sum256(it.Values[0].Data)
				raw, _ := hex.DecodeString(w.Raw)
				switch {
				case len(it.Problems) > 0:
					t.Fatalf("item %d: %v", i, it.Problems)
				case hex.EncodeToString(sum[:]) != w.JPEG || !it.Values[0].Encoded:
					t.Fatalf("item %d: the JPEG is not the file given", i)
				case it.Values[1].Int != w.Label || it.Values[4].Float != float64(w.Label):
					t.Fatalf("item %d: label %d (%g), want %d", i, it.Values[1].Int, it.Values[4].Float, w.Label)
				case len(it.Values[2].Texts) != 1 || string(it.Values[2].Texts[0]) != w.Caption:
					t.Fatalf("item %d: captions %q, want %q", i, it.Values[2].Texts, w.Caption)
				case string(it.Values[3].Data) != string(raw):
					t.Fatalf("item %d: bytes %x, want %s", i, it.Values[3].Data, w.Raw)
				}
			}
		})
	}
}

// TestMDSScalarsAndImages reads the MDS columns of other encodings: a
// float32 score, a PNG image.
func TestMDSScalarsAndImages(t *testing.T) {
	want := truth(t)
	cols := &Columns{Fields: []field.Desc{{Type: field.Float, Name: "score"}, {Type: field.RGBImage, Name: "png"}},
		Take: []string{"score", "png"}}
	sources, err := cols.MDSSources(filepath.Join(peers, "mds"))
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range readAll(t, sources) {
		if it.Values[0].Float != want[i].Score || !strings.HasPrefix(string(it.Values[1].Data), "\x89PNG") {
			t.Fatalf("item %d: score %g, want %g; png %q", i, it.Values[0].Float, want[i].Score, it.Values[1].Data[:4])
		}
	}
}

func tableSources(c *Columns, format, root string) ([]Source, error) {
	if format == "mds" {
		return c.MDSSources(root)
	}
	return c.LitdataSources(root)
}

// TestTablesRefuse: a wrong mapping or a damaged dataset is an error
// naming the column, the file or what is not read.
func TestTablesRefuse(t *testing.T) {
	copyDir := func(t *testing.T, name string) string {
		t.Helper()
		dst := filepath.Join(t.TempDir(), name)
		if err := os.CopyFS(dst, os.DirFS(filepath.Join(peers, name))); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	edit := func(t *testing.T, file, from, to string) {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), from) {
			t.Fatalf("%s holds no %q", file, from)
		}
		if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(b), from, to)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	image := field.Desc{Type: field.RGBImage, Name: "image"}
	label := field.Desc{Type: field.Int, Name: "label"}
	cases := []struct {
		name, format string
		fields       []field.Desc
		take         []string
		damage       func(t *testing.T, dir string)
		want         string
		notExist     bool
	}{
		{"no such column", "mds", []field.Desc{label}, []string{"target"}, nil,
			`field "label": no column "target" (columns: caption, image, label, png, raw, score)`, false},
		{"a column of another kind", "litdata", []field.Desc{label}, []string{"caption"}, nil,
			`field "label": column "caption" holds str, which an IntField cannot take`, false},
		{"an audio field from a str column", "mds", []field.Desc{{Type: field.Audio, Name: "audio"}}, []string{"caption"}, nil,
			`field "audio": column "caption" holds str, which an AudioField cannot take`, false},
		{"no index", "mds", []field.Desc{image}, []string{"image"},
			func(t *testing.T, d string) { os.Remove(filepath.Join(d, "index.json")) }, "an MDS dataset's index", true},
		{"brotli", "mds", []field.Desc{image}, []string{"image"},
			func(t *testing.T, d string) {
				edit(t, filepath.Join(d, "index.json"), `"compression": "zstd"`, `"compression": "br"`)
			},
			"brotli-compressed shards (br) are not read", false},
		{"a shard cut short", "mds", []field.Desc{image}, []string{"image"},
			func(t *testing.T, d string) {
				p := filepath.Join(d, "shard.00001.mds")
				b, _ := os.ReadFile(p)
				os.WriteFile(p, b[:len(b)/2], 0o644)
			}, "shard.00001.mds: sample", false},
		{"encrypted", "litdata", []field.Desc{image}, []string{"image"},
			func(t *testing.T, d string) {
				edit(t, filepath.Join(d, "index.json"), `"encryption": null`, `"encryption": {"algorithm": "fernet"}`)
			},
			"an encrypted dataset is not read", false},
		{"another item loader", "litdata", []field.Desc{image}, []string{"image"},
			func(t *testing.T, d string) {
				edit(t, filepath.Join(d, "index.json"), `"PyTreeLoader"`, `"TokensLoader"`)
			},
			"items of the TokensLoader are not read", false},
	}
	dirs := map[string]string{"mds": "mds", "litdata": "litdata", "brotli": "mds-zstd"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := dirs[c.format]
			if c.name == "brotli" {
				dir = dirs["brotli"]
			}
			root := filepath.Join(peers, dir)
			if c.damage != nil {
				root = copyDir(t, dir)
				c.damage(t, root)
			}
			cols := &Columns{Fields: c.fields, Take: c.take}
			sources, err := tableSources(cols, c.format, root)
			if err == nil {
				for _, s := range sources {
					for err == nil {
						_, err = s.Next()
					}
					if err != io.EOF {
						err = fmt.Errorf("%s: %w", s.Name(), err)
						break
					}
					err = nil
				}
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, fs.ErrNotExist) != c.notExist {
				t.Fatalf("got %v, want %q (not exist: %v)", err, c.want, c.notExist)
			}
		})
	}
}

// TestAudioValues: an audio field takes a file's bytes (a bytes column, a
// webdataset member), handed to the audio encoder undecoded, and nothing
// else.
func TestAudioValues(t *testing.T) {
	audio := field.Desc{Type: field.Audio, Name: "audio"}
	wav := []byte("RIFF....WAVE")
	for _, enc := range []string{"bytes", "str", "json", "int", "jpeg", "pil", "float32"} {
		if got, want := canTake(field.Audio, enc), enc == "bytes"; got != want {
			t.Errorf("canTake(Audio, %q) = %v, want %v", enc, got, want)
		}
	}
	for _, tc := range []struct {
		name string
		make func() (field.Value, error)
	}{
		{"bytes column", func() (field.Value, error) { return fromColumn(audio, "bytes", wav) }},
		{"webdataset member", func() (field.Value, error) { return fromMember(audio, wav) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tc.make()
			if err != nil || !v.Encoded || string(v.Data) != string(wav) {
				t.Fatalf("got %+v, %v; want the bytes, encoded", v, err)
			}
		})
	}
	w := &WebDataset{Fields: []field.Desc{audio}, Take: []Take{{Exts: []string{"json"}, JSONKey: "sound"}}}
	if err := w.Check(); err == nil || !strings.Contains(err.Error(), "comes from a file member, not a JSON key") {
		t.Fatalf("an audio field from a JSON key: %v", err)
	}
}
