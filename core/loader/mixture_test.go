package loader

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/order"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// joinSources writes one file of blobs (about size bytes each, label = the
// global sample id) per source size and joins them as a mixture's reader.
func joinSources(t testing.TB, sizes []int, size int) *beton.Reader {
	t.Helper()
	dir := t.TempDir()
	descs := []field.Desc{{Type: field.Bytes, Name: "blob"}, {Type: field.Int, Name: "label"}}
	var files []*beton.Reader
	first := 0
	for k, n := range sizes {
		enc, err := imageenc.NewEncoder(descs[0], field.ImageOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := writeFile(t, filepath.Join(dir, fmt.Sprintf("source-%d.beton", k)), descs,
			[]field.Encoder{enc, field.NewIntEncoder()}, n, func(i int) []field.Value {
				return []field.Value{{Data: blob(first+i, size)}, {Int: int64(first + i)}}
			})
		files = append(files, betontest.Open(t, p))
		first += n
	}
	r, err := beton.Join("mixture", files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func parts(sizes []int, takes ...uint64) []order.Part {
	out := make([]order.Part, len(sizes))
	start := uint64(0)
	for k, n := range sizes {
		out[k] = order.Part{Start: start, Size: uint64(n), Take: takes[k]}
		start += uint64(n)
	}
	return out
}

// labels are the decoded labels of an epoch's batches (the label output is
// the last one before the ids).
func labels(t testing.TB, bs []copied) []uint64 {
	t.Helper()
	var out []uint64
	for _, b := range bs {
		lab, ids := b.bufs[len(b.bufs)-2], b.ids()
		for j, id := range ids {
			if got := binary.LittleEndian.Uint64(lab[8*j:]); got != id {
				t.Fatalf("sample %d decoded label %d", id, got)
			}
		}
		out = append(out, ids...)
	}
	return out
}

// TestMixtureEpochs: a loader over a mixture reads each source's takes
// every epoch, counts them by source in Stats, and its ranks split the
// mixture's global order as they split a single file's.
func TestMixtureEpochs(t *testing.T) {
	sizes := []int{40, 30, 20}
	r := joinSources(t, sizes, 3000)
	ps := parts(sizes, 60, 10, 20)
	for _, name := range []string{"sequential", "sequential_contiguous", "random", "quasi_random"} {
		t.Run(name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Order, cfg.BatchSize, cfg.DropLast, cfg.Mixture, cfg.OSCache = name, 8, false, ps, false
			l := newLoader(t, r, cfg, map[string][]string{"blob": {`{"op":"bytes"}`}, "label": {`{"op":"int"}`}})
			if l.NumSamples() != 90 || l.GlobalSamples() != 90 {
				t.Fatalf("%d samples per epoch", l.NumSamples())
			}
			for ep := uint64(0); ep < 2; ep++ {
				got := labels(t, epoch(t, l, ep, 0))
				global, err := l.GlobalOrder(ep)
				if err != nil || !slices.Equal(got, global) {
					t.Fatalf("epoch %d: the batches are not the global order (%v)", ep, err)
				}
				st := l.Stats().Epochs[ep].Sources
				for k, p := range ps {
					n := 0
					for _, id := range got {
						if l.SourceOf(id) == k {
							n++
						}
					}
					if uint64(n) != p.Take || st[k].Samples != p.Take || st[k].PagesRead == 0 || st[k].BytesRead == 0 ||
						st[k].ReadNs <= 0 {
						t.Fatalf("epoch %d source %d: %d samples, stats %+v, want %d", ep, k, n, st[k], p.Take)
					}
				}
			}
			if s := l.Stats().Sources; s[0].Samples != 120 || s[2].Samples != 40 {
				t.Fatalf("sources over two epochs: %+v", s)
			}
			// Three ranks: each its share, together the padded global order.
			var all []uint64
			for rank := range 3 {
				c := cfg
				c.Rank, c.World = rank, 3
				lr := newLoader(t, r, c, map[string][]string{"label": {`{"op":"int"}`}})
				ids := labels(t, epoch(t, lr, 1, 0))
				if len(ids) != 30 {
					t.Fatalf("rank %d: %d samples", rank, len(ids))
				}
				all = append(all, ids...)
			}
			global, _ := l.GlobalOrder(1)
			slices.Sort(all)
			slices.Sort(global)
			if !slices.Equal(all, global) {
				t.Fatal("the ranks' samples are not the epoch's")
			}
		})
	}
}

// TestMixtureQuasiRandomReadsPagesOnce: a mixture many times larger than
// the process cache's bound (an upsampled source and a downsampled one)
// reads each page it needs about once per epoch in QUASI_RANDOM order,
// where RANDOM order reads pages many times over.
func TestMixtureQuasiRandomReadsPagesOnce(t *testing.T) {
	sizes := []int{200, 300}
	r := joinSources(t, sizes, 100_000) // about 20 samples per 2 MiB page
	ps := parts(sizes, 400, 100)
	reads := map[string]uint64{}
	for _, name := range []string{"quasi_random", "random"} {
		cfg := baseConfig()
		cfg.Order, cfg.BatchSize, cfg.Mixture, cfg.Workers, cfg.OSCache = name, 4, ps, 2, false
		cfg.QuasiWindow, cfg.MaxResidentPages, cfg.BatchesAhead = 2, 6, 1
		l := newLoader(t, r, cfg, map[string][]string{"label": {`{"op":"int"}`}})
		global, err := l.GlobalOrder(0)
		if err != nil {
			t.Fatal(err)
		}
		pages := map[uint32]bool{}
		for _, id := range global {
			pages[l.pageOf(id)] = true
		}
		epoch(t, l, 0, 0)
		st := l.Stats()
		reads[name] = st.PagesRead
		if name == "quasi_random" && st.PagesRead > uint64(len(pages))+2 {
			t.Errorf("quasi_random: %d page reads for %d pages", st.PagesRead, len(pages))
		}
		if src := st.Epochs[0].Sources; src[0].PagesRead+src[1].PagesRead != st.PagesRead {
			t.Errorf("%s: pages by source %+v do not add up to %d", name, src, st.PagesRead)
		}
	}
	if reads["random"] < 3*reads["quasi_random"] {
		t.Errorf("random read %d pages, quasi_random %d: the bound does not bite", reads["random"], reads["quasi_random"])
	}
}

func TestMixtureConfigRefused(t *testing.T) {
	r := joinSources(t, []int{5, 5}, 100)
	cases := []struct {
		name string
		edit func(*Config)
	}{
		{"indices", func(c *Config) { c.Indices = []uint64{1} }},
		{"outside", func(c *Config) { c.Mixture = []order.Part{{Start: 0, Size: 11, Take: 1}} }},
		{"overlap", func(c *Config) { c.Mixture = []order.Part{{Start: 0, Size: 6, Take: 1}, {Start: 5, Size: 5, Take: 1}} }},
		{"empty part", func(c *Config) { c.Mixture = []order.Part{{Start: 0, Size: 0, Take: 1}} }},
	}
	for _, c := range cases {
		cfg := baseConfig()
		cfg.Mixture = parts([]int{5, 5}, 5, 5)
		c.edit(&cfg)
		if _, err := New(r, cfg, nil); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

// joinImages joins two files of writeImages' raw images (label = local
// index) as the sources of a mixture.
func joinImages(t testing.TB, n int) *beton.Reader {
	t.Helper()
	dir := t.TempDir()
	var files []*beton.Reader
	for k := range 2 {
		files = append(files, betontest.Open(t, writeImages(t, dir, fmt.Sprintf("%d.beton", k), n, "raw")))
	}
	r, err := beton.Join("mixture", files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func program(t testing.TB, r *beton.Reader, f int, ops ...string) *pipeline.Program {
	t.Helper()
	raw := make([]json.RawMessage, len(ops))
	for k, op := range ops {
		raw[k] = json.RawMessage(op)
	}
	p, err := pipeline.Build(r, f, raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSourcePrograms: source 1's images go through its own program (a
// certain flip), source 0's through the output's; batches still hold one
// shape, and programs that would break that are refused.
func TestSourcePrograms(t *testing.T) {
	r := joinImages(t, 9)
	cfg := baseConfig()
	cfg.Order, cfg.DropLast, cfg.Mixture = "random", false, parts([]int{9, 9}, 9, 9)
	main := program(t, r, 0, `{"op":"rgb_simple"}`)
	cfg.SourcePrograms = [][]*pipeline.Program{{nil, program(t, r, 0, `{"op":"rgb_simple"}`, `{"op":"flip_h","p":1}`)}}
	l, err := New(r, cfg, []*pipeline.Program{main})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	row := imgW * 3
	for _, b := range epoch(t, l, 0, 0) {
		for j, id := range b.ids() {
			got, want := b.bufs[0][j*imgW*imgH*3:(j+1)*imgW*imgH*3], pixels(int(id%9))
			if id >= 9 { // flipped: pixel x of a row is the source's pixel imgW-1-x
				flipped := make([]byte, len(want))
				for y := range imgH {
					for x := range imgW {
						copy(flipped[y*row+3*x:y*row+3*x+3], want[y*row+3*(imgW-1-x):y*row+3*(imgW-1-x)+3])
					}
				}
				want = flipped
			}
			if !slices.Equal(got, want) {
				t.Fatalf("sample %d: not its source's pipeline's output", id)
			}
		}
	}

	cases := []struct {
		name  string
		progs []*pipeline.Program
		alt   *pipeline.Program
		want  string
	}{
		{"shape", []*pipeline.Program{main}, program(t, r, 0, `{"op":"rgb_rrc","size":[4,4],"scale":[0.5,1],"ratio":[1,1]}`), "gives [4 4 3] |u1 samples"},
		{"batch ops", []*pipeline.Program{main}, program(t, r, 0, `{"op":"rgb_simple"}`, `{"op":"image_mixup","alpha":0.4,"same_lambda":false}`), "batch operations"},
		{"field", []*pipeline.Program{main}, program(t, r, 1, `{"op":"int"}`), `reads field "label"`},
		{"views", []*pipeline.Program{main, program(t, r, 0, `{"op":"rgb_simple"}`)}, program(t, r, 0, `{"op":"rgb_simple"}`), "output 1 reads the field too"},
	}
	for _, c := range cases {
		cfg.SourcePrograms = [][]*pipeline.Program{{c.alt}}
		if _, err := New(r, cfg, c.progs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
