package ingest

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"image"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/internal/s3test"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/remote"
)

func TestMain(m *testing.M) { s3test.Main(m) }

var photoOnce struct {
	sync.Once
	pix  []byte
	w, h int
	err  string
}

// tile is JPEG tile i: a crop of a real photo (a Debian wallpaper decoded
// at 1/8), 40 to 120 pixels a side.
func tile(t testing.TB, i int) []byte {
	t.Helper()
	photoOnce.Do(func() {
		for _, p := range []string{"/usr/share/backgrounds/mate/nature/Garden.jpg",
			"/usr/share/backgrounds/mate/nature/YellowFlower.jpg", "/usr/share/backgrounds/Fossa_by_Jasper_Roks.jpg"} {
			src, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			d := jpeg.NewDecoder()
			defer d.Close()
			w, h, err := d.DecodeConfig(src)
			if err != nil {
				continue
			}
			photoOnce.w, photoOnce.h = w/8, h/8
			photoOnce.pix = make([]byte, photoOnce.w*photoOnce.h*3)
			if err := d.DecodeCropResize(src, image.Rect(0, 0, w, h), photoOnce.w, photoOnce.h, photoOnce.pix); err == nil {
				return
			}
		}
		photoOnce.err = "no photo installed (Debian package mate-backgrounds)"
	})
	if photoOnce.err != "" {
		t.Skip(photoOnce.err)
	}
	w, h := 40+(i*37)%81, 40+(i*53)%81
	x0, y0 := (i*31)%(photoOnce.w-w), (i*17)%(photoOnce.h-h)
	pix := make([]byte, w*h*3)
	for y := 0; y < h; y++ {
		copy(pix[y*w*3:(y+1)*w*3], photoOnce.pix[((y0+y)*photoOnce.w+x0)*3:])
	}
	b, err := jpeg.Encode(pix, w, h, 90)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type member struct {
	name string
	data []byte
}

func tarOf(t testing.TB, members []member) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range members {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: int64(len(m.data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(m.data)
	}
	tw.Close()
	return buf.Bytes()
}

// sample g of a good shard: an image, a caption and a label.
func sample(t testing.TB, g int) []member {
	key := fmt.Sprintf("%06d", g)
	return []member{{key + ".jpg", tile(t, g)}, {key + ".txt", []byte(fmt.Sprintf("photo crop number %d", g))},
		{key + ".cls", []byte(fmt.Sprintf("%d\n", g%7))}}
}

// shards writes len(counts) good shards; shard k holds counts[k] samples.
func shards(t testing.TB, dir string, counts ...int) []string {
	var paths []string
	g := 0
	for k, n := range counts {
		var ms []member
		for i := 0; i < n; i++ {
			ms = append(ms, sample(t, g)...)
			g++
		}
		p := filepath.Join(dir, fmt.Sprintf("shard-%02d.tar", k))
		if err := os.WriteFile(p, tarOf(t, ms), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func fields() []field.Desc {
	return []field.Desc{{Type: field.RGBImage, Name: "image"}, {Type: field.Text, Name: "caption"}, {Type: field.Int, Name: "label"}}
}

func takes() []Take {
	return []Take{{Exts: []string{"jpg", "png"}}, {Exts: []string{"txt"}}, {Exts: []string{"cls"}}}
}

type run struct {
	opts   Options
	shards []string
	wds    *WebDataset
	// tokenizer, when set, tokenizes the captions of field 1 as the
	// caller's would (on its own goroutine, polling Texts).
	tokenizer func(string) []uint32
}

// convert runs a conversion into dir and returns its report and the
// bytes of every file it wrote.
func convert(t testing.TB, dir string, r run) (Report, [][]byte, error) {
	t.Helper()
	wds := r.wds
	if wds == nil {
		wds = &WebDataset{Fields: fields(), Take: takes()}
	}
	if err := wds.Check(); err != nil {
		return Report{}, nil, err
	}
	o := r.opts
	o.Fields = wds.Fields
	o.PageSize = beton.MinPageSize
	o.Encoders = nil
	for _, d := range wds.Fields {
		e, err := imageenc.NewEncoder(d, field.ImageOptions{WriteMode: "jpg", MaxResolution: 64, JPEGQuality: 90})
		if err != nil {
			t.Fatal(err)
		}
		o.Encoders = append(o.Encoders, e)
	}
	if o.Name == nil {
		o.Name = func(k int) string { return filepath.Join(dir, fmt.Sprintf("out-%03d.beton", k)) }
	}
	if r.tokenizer != nil {
		o.Tokenize = []int{1}
	}
	j, err := Run(wds.Sources(r.shards), o)
	if err != nil {
		return Report{}, nil, err
	}
	if r.tokenizer != nil {
		for {
			b, ok, finished, err := j.Texts(10 * time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if finished {
				break
			}
			if !ok {
				continue
			}
			var toks [][]uint32
			for _, s := range b.Texts {
				toks = append(toks, r.tokenizer(string(s)))
			}
			if err := j.PutTokens(b.ID, toks); err != nil {
				break // the job failed: Wait says why
			}
		}
	}
	rep, err := j.Wait()
	if err != nil {
		return rep, nil, err
	}
	var files [][]byte
	for _, f := range rep.Files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
	}
	return rep, files, nil
}

// captions reads the first caption (and its tokens) of every sample of a file.
func captions(t testing.TB, path string) (texts []string, tokens [][]uint32, labels []int64) {
	t.Helper()
	r, err := beton.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := uint64(0); i < r.NumSamples(); i++ {
		col, heap, err := r.Read(i, 1)
		if err != nil {
			t.Fatal(err)
		}
		c, err := field.TextCaption(field.ParseTextMeta(col), heap, 0)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(c.Text))
		var ids []uint32
		for k := 0; k < c.NumTokens(); k++ {
			ids = append(ids, c.Token(k))
		}
		tokens = append(tokens, ids)
		lcol, _, err := r.Read(i, 2)
		if err != nil {
			t.Fatal(err)
		}
		labels = append(labels, int64(lcol[0]))
	}
	return texts, tokens, labels
}

// The files do not depend on the number of encoders or readers, in every
// way of cutting them; samples keep the shards' order.
func TestDeterministic(t *testing.T) {
	in := shards(t, t.TempDir(), 9, 0, 14, 5)
	for _, tc := range []struct {
		name  string
		split Split
		files int
	}{
		{"one file", One, 1},
		{"per shard", PerSource, 4},
		{"by size", BySize, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want [][]byte
			for _, par := range [][2]int{{1, 1}, {2, 3}, {5, 2}} {
				rep, files, err := convert(t, t.TempDir(), run{shards: in,
					opts: Options{Workers: par[0], Readers: par[1], Split: tc.split, Target: 3 << 20, TextBatch: 4}})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Samples != 28 || rep.Skipped != 0 || rep.NumProbs != 0 {
					t.Fatalf("report %+v", rep)
				}
				if tc.files > 0 && len(files) != tc.files {
					t.Fatalf("%d files, want %d", len(files), tc.files)
				}
				if want == nil {
					want = files
					continue
				}
				if len(files) != len(want) {
					t.Fatalf("workers %d, readers %d: %d files, want %d", par[0], par[1], len(files), len(want))
				}
				for k := range files {
					if !bytes.Equal(files[k], want[k]) {
						t.Fatalf("workers %d, readers %d: file %d differs", par[0], par[1], k)
					}
				}
			}
		})
	}
	dir := t.TempDir()
	rep, _, err := convert(t, dir, run{shards: in, opts: Options{Workers: 3, Split: PerSource}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep.Counts) != "[9 0 14 5]" {
		t.Fatalf("counts per shard %v", rep.Counts)
	}
	texts, _, labels := captions(t, rep.Files[2])
	for i, s := range texts {
		if g := 9 + i; s != fmt.Sprintf("photo crop number %d", g) || labels[i] != int64(g%7) {
			t.Fatalf("sample %d of shard 2: %q, label %d", i, s, labels[i])
		}
	}
}

// Files cut by size hold about the target each, in order.
func TestSplitBySize(t *testing.T) {
	in := shards(t, t.TempDir(), 60)
	const target = 2 << 20
	// Big images (kept at their size, 40 to 120 px raw) so a page fills.
	wds := &WebDataset{Fields: fields(), Take: takes()}
	rep, files, err := convert(t, t.TempDir(), run{shards: in, wds: wds, opts: Options{Split: BySize, Target: target}})
	if err != nil {
		t.Fatal(err)
	}
	total := uint64(0)
	for k, c := range rep.Counts {
		total += c
		if c == 0 {
			t.Fatalf("file %d is empty", k)
		}
		if k < len(files)-1 && uint64(len(files[k])) < target {
			t.Fatalf("file %d has %d bytes, below the target", k, len(files[k]))
		}
	}
	if total != 60 {
		t.Fatalf("%d samples in %d files", total, len(files))
	}
}

// Tokens from the caller's tokenizer land beside their captions.
func TestTokens(t *testing.T) {
	in := shards(t, t.TempDir(), 7, 6)
	tok := func(s string) []uint32 {
		var out []uint32
		for _, w := range strings.Fields(s) {
			out = append(out, uint32(len(w)))
		}
		return out
	}
	wds := &WebDataset{Fields: fields(), Take: takes()}
	wds.Fields[1].Text = &field.TextArgs{Tokens: true}
	for _, workers := range []int{1, 4} {
		rep, _, err := convert(t, t.TempDir(), run{shards: in, wds: wds, tokenizer: tok, opts: Options{Workers: workers, TextBatch: 3}})
		if err != nil {
			t.Fatal(err)
		}
		texts, tokens, _ := captions(t, rep.Files[0])
		if len(texts) != 13 {
			t.Fatalf("%d samples", len(texts))
		}
		for i, s := range texts {
			if fmt.Sprint(tokens[i]) != fmt.Sprint(tok(s)) {
				t.Fatalf("sample %d %q: tokens %v, want %v", i, s, tokens[i], tok(s))
			}
		}
	}
}

// Bad members are reported with their shard and key: skipped, or failing
// the write, by policy.
func TestBadMembers(t *testing.T) {
	dir := t.TempDir()
	good := func(g int) []member { return sample(t, g) }
	without := func(ms []member, ext string) []member {
		var out []member
		for _, m := range ms {
			if !strings.HasSuffix(m.name, "."+ext) {
				out = append(out, m)
			}
		}
		return out
	}
	corrupt := good(1)
	corrupt[0].data = append(bytes.Clone(corrupt[0].data[:200]), bytes.Repeat([]byte{0x55}, 300)...)
	badLabel := good(1)
	badLabel[2].data = []byte("seven")
	badJPEGHeader := good(1)
	badJPEGHeader[0].data = []byte("\xff\xd8\xff\xe0 not a jpeg at all")
	truncated := tarOf(t, append(good(0), good(1)...))
	truncated = truncated[:len(truncated)-1024-600]
	for _, tc := range []struct {
		name    string
		shard   []byte
		ignore  []string
		samples uint64 // written with Skip
		dropped bool
		want    string // in the problem and the error
	}{
		{"corrupt JPEG", tarOf(t, append(good(0), append(corrupt, good(2)...)...)), nil, 2, true, `sample "000001"`},
		{"not a JPEG", tarOf(t, append(good(0), badJPEGHeader...)), nil, 1, true, `sample "000001"`},
		{"missing caption", tarOf(t, append(good(0), without(good(1), "txt")...)), nil, 1, true, `sample "000001": no txt member for field "caption"`},
		{"missing image", tarOf(t, append(without(good(0), "jpg"), good(1)...)), nil, 1, true, `sample "000000": no jpg or png member`},
		{"bad label", tarOf(t, append(good(0), badLabel...)), nil, 1, true, `member "000001.cls": field "label": not an integer`},
		{"unknown extension", tarOf(t, append(good(0), member{"000000.json", []byte("{}")})), nil, 1, false, `member "000000.json": no field takes extension "json"`},
		{"duplicate", tarOf(t, append(good(0), member{"000000.JPG", tile(t, 5)})), nil, 0, true, `member "000000.JPG": a second "jpg" member`},
		{"truncated shard", truncated, nil, 1, true, `sample "000001", member "000001.txt": after this member: not a readable tar file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".tar")
			if err := os.WriteFile(path, tc.shard, 0o644); err != nil {
				t.Fatal(err)
			}
			in := []string{shards(t, t.TempDir(), 2)[0], path}
			_, _, err := convert(t, t.TempDir(), run{shards: in})
			if !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBad naming %s and %s", err, path, tc.want)
			}
			out := t.TempDir()
			rep, _, err := convert(t, out, run{shards: in, opts: Options{Skip: true, Split: PerSource}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Counts[1] != tc.samples || rep.NumProbs == 0 {
				t.Fatalf("report %+v, want %d samples from the bad shard", rep, tc.samples)
			}
			p := rep.Problems[0]
			if p.Source != path || !strings.Contains(p.Error(), tc.want) || p.Dropped != tc.dropped {
				t.Fatalf("problem %+v (%v), want one in %s naming %s, dropped %v", p, p.Error(), path, tc.want, tc.dropped)
			}
			if left, _ := filepath.Glob(filepath.Join(out, ".*")); len(left) > 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}
	// Extensions named to be ignored are not problems.
	path := filepath.Join(dir, "extra.tar")
	os.WriteFile(path, tarOf(t, append(good(0), member{"000000.json", []byte("{}")})), 0o644)
	rep, _, err := convert(t, t.TempDir(), run{shards: []string{path}, wds: &WebDataset{Fields: fields(), Take: takes(), Ignore: []string{"json"}}})
	if err != nil || rep.NumProbs != 0 || rep.Samples != 1 {
		t.Fatalf("report %+v, %v", rep, err)
	}
}

// A failed write leaves no output file behind.
func TestFailureLeavesNothing(t *testing.T) {
	in := shards(t, t.TempDir(), 5)
	bad := filepath.Join(t.TempDir(), "missing.tar")
	out := t.TempDir()
	_, _, err := convert(t, out, run{shards: append(in, bad)})
	if err == nil || !strings.Contains(err.Error(), "missing.tar") {
		t.Fatalf("err = %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "*")); len(left) > 0 {
		t.Fatalf("files left: %v", left)
	}
	hidden, _ := filepath.Glob(filepath.Join(out, ".*"))
	if len(hidden) > 0 {
		t.Fatalf("temporary files left: %v", hidden)
	}
}

// A write that skips every sample fails, naming a problem, and leaves no
// file: files without a sample are no dataset.
func TestNothingWritten(t *testing.T) {
	dir := t.TempDir()
	notTar := filepath.Join(dir, "not-a-tar.tar")
	os.WriteFile(notTar, []byte("plain text, not a tar file"), 0o644)
	for _, in := range [][]string{
		{filepath.Join(dir, "missing-1.tar"), filepath.Join(dir, "missing-2.tar")},
		{notTar},
	} {
		out := t.TempDir()
		_, _, err := convert(t, out, run{shards: in, opts: Options{Skip: true}})
		if err == nil || !strings.Contains(err.Error(), "no sample could be written") || !strings.Contains(err.Error(), in[0]) {
			t.Fatalf("%v: err = %v, want one naming %s", in, err, in[0])
		}
		if left, _ := filepath.Glob(filepath.Join(out, "*")); len(left) > 0 {
			t.Fatalf("files left: %v", left)
		}
	}
}

// Values taken from JSON members: several captions, numbers, sub-objects.
func TestJSONKeys(t *testing.T) {
	doc := `{"captions": ["a dog", "the same dog"], "meta": {"label": 3, "score": 0.5}}`
	shard := tarOf(t, []member{{"a.jpg", tile(t, 0)}, {"a.json", []byte(doc)}})
	path := filepath.Join(t.TempDir(), "json.tar")
	os.WriteFile(path, shard, 0o644)
	wds := &WebDataset{
		Fields: []field.Desc{{Type: field.RGBImage, Name: "image"}, {Type: field.Text, Name: "caption"}, {Type: field.Int, Name: "label"},
			{Type: field.Float, Name: "score"}, {Type: field.JSON, Name: "meta"}},
		Take: []Take{{Exts: []string{"jpg"}}, {Exts: []string{"json"}, JSONKey: "captions"}, {Exts: []string{"json"}, JSONKey: "meta.label"},
			{Exts: []string{"json"}, JSONKey: "meta.score"}, {Exts: []string{"json"}, JSONKey: "meta"}},
	}
	rep, _, err := convert(t, t.TempDir(), run{shards: []string{path}, wds: wds})
	if err != nil {
		t.Fatal(err)
	}
	r, err := beton.Open(rep.Files[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	col, heap, _ := r.Read(0, 1)
	m := field.ParseTextMeta(col)
	c1, _ := field.TextCaption(m, heap, 1)
	if m.Captions != 2 || string(c1.Text) != "the same dog" {
		t.Fatalf("captions %+v, second %q", m, c1.Text)
	}
	if col, _, _ := r.Read(0, 2); col[0] != 3 {
		t.Fatalf("label %v", col)
	}
	if _, heap, _ := r.Read(0, 4); string(heap) != "{\"label\":3,\"score\":0.5}\x00" {
		t.Fatalf("meta %q", heap)
	}
	for _, tc := range []struct{ key, want string }{
		{"nothing", `no key "nothing"`},
		{"meta.label.x", "not an object"},
		{"meta", "not a string or a list of strings"},
	} {
		wds.Take[1].JSONKey = tc.key
		_, _, err := convert(t, t.TempDir(), run{shards: []string{path}, wds: wds})
		if !errors.Is(err, ErrBad) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("key %q: err = %v, want %q", tc.key, err, tc.want)
		}
	}
}

// Shards are read over HTTP and from S3 as from disk.
func TestRemoteShards(t *testing.T) {
	dir := t.TempDir()
	in := shards(t, dir, 6, 4)
	_, local, err := convert(t, t.TempDir(), run{shards: in, opts: Options{Split: PerSource}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	urls := []string{srv.URL + "/shard-00.tar", srv.URL + "/shard-01.tar"}
	_, got, err := convert(t, t.TempDir(), run{shards: urls, opts: Options{Split: PerSource}})
	if err != nil {
		t.Fatal(err)
	}
	for k := range got {
		if !bytes.Equal(got[k], local[k]) {
			t.Fatalf("shard %d over HTTP differs", k)
		}
	}
	_, _, err = convert(t, t.TempDir(), run{shards: []string{srv.URL + "/nothing.tar"}})
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("missing shard over HTTP: %v", err)
	}

	endpoint := s3test.Start(t)
	s3test.Env(t, endpoint)
	for k, p := range in {
		b, _ := os.ReadFile(p)
		s3test.Put(t, endpoint, "wds", fmt.Sprintf("train/%d.tar", k), b)
	}
	wds := &WebDataset{Fields: fields(), Take: takes(), Remote: remote.Options{}}
	_, got, err = convert(t, t.TempDir(), run{shards: []string{"s3://wds/train/0.tar", "s3://wds/train/1.tar"}, wds: wds, opts: Options{Split: PerSource}})
	if err != nil {
		t.Fatal(err)
	}
	for k := range got {
		if !bytes.Equal(got[k], local[k]) {
			t.Fatalf("shard %d from S3 differs", k)
		}
	}
}
