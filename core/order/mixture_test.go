package order

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// mixtures are the parts of the table tests: taken whole, upsampled,
// downsampled, both, and with a part taken not at all.
var mixtures = []struct {
	name  string
	parts []Part
}{
	{"once each", []Part{{0, 10, 10}, {10, 7, 7}}},
	{"upsampled", []Part{{0, 10, 25}, {10, 7, 7}}},
	{"downsampled", []Part{{0, 50, 12}, {50, 9, 9}}},
	{"both", []Part{{0, 40, 13}, {40, 6, 17}, {46, 20, 20}}},
	{"one part", []Part{{0, 33, 80}}},
	{"part unused", []Part{{0, 5, 5}, {5, 8, 0}, {13, 4, 9}}},
}

// pageOf8 puts 8 consecutive samples on a page.
func pageOf8(id uint64) uint32 { return uint32(id / 8) }

// counts is how often each id appears in ids.
func counts(ids []uint64) map[uint64]int {
	c := map[uint64]int{}
	for _, id := range ids {
		c[id]++
	}
	return c
}

// TestMixTakesExactCounts: every epoch holds exactly Take samples of each
// part, all from the part's range, and after E epochs every sample of a
// part has been taken floor or ceil of E*Take/Size times, as a stream of
// passes without replacement gives (no sample taken twice before every
// sample was taken once).
func TestMixTakesExactCounts(t *testing.T) {
	for _, m := range mixtures {
		for _, name := range []string{"sequential", "random", "quasi_random"} {
			t.Run(m.name+"/"+name, func(t *testing.T) {
				seen := map[uint64]int{}
				for epoch := uint64(0); epoch < 7; epoch++ {
					got, err := Mix(m.parts, name, pageOf8, 4, 3, epoch)
					if err != nil {
						t.Fatal(err)
					}
					var total uint64
					for _, p := range m.parts {
						total += p.Take
					}
					if uint64(len(got)) != total {
						t.Fatalf("epoch %d: %d samples, want %d", epoch, len(got), total)
					}
					for k, p := range m.parts {
						n := uint64(0)
						for _, id := range got {
							if id >= p.Start && id < p.Start+p.Size {
								n++
							}
						}
						if n != p.Take {
							t.Fatalf("epoch %d part %d: %d samples, want %d", epoch, k, n, p.Take)
						}
					}
					for id, c := range counts(got) {
						seen[id] += c
					}
					for _, p := range m.parts {
						taken := (epoch + 1) * p.Take
						for i := range p.Size {
							c := uint64(seen[p.Start+i])
							if c != taken/p.Size && c != (taken+p.Size-1)/p.Size {
								t.Fatalf("after epoch %d: sample %d taken %d times, want %d or %d",
									epoch, p.Start+i, c, taken/p.Size, (taken+p.Size-1)/p.Size)
							}
						}
					}
				}
			})
		}
	}
}

// TestMixIsPure: the same arguments give the same order, another epoch or
// seed another one.
func TestMixIsPure(t *testing.T) {
	parts := mixtures[3].parts
	for _, name := range []string{"random", "quasi_random"} {
		a, _ := Mix(parts, name, pageOf8, 4, 9, 2)
		b, _ := Mix(parts, name, pageOf8, 4, 9, 2)
		c, _ := Mix(parts, name, pageOf8, 4, 9, 3)
		d, _ := Mix(parts, name, pageOf8, 4, 10, 2)
		if !slices.Equal(a, b) || slices.Equal(a, c) || slices.Equal(a, d) {
			t.Errorf("%s: not a function of (seed, epoch)", name)
		}
	}
}

// TestMixOfWholePartsIsTheDatasetsOrder: parts each taken once give the
// order of the one dataset they are read as.
func TestMixOfWholePartsIsTheDatasetsOrder(t *testing.T) {
	parts := []Part{{0, 30, 30}, {30, 0, 0}, {30, 11, 11}}
	all := makeIndices("range", 41)
	for epoch := uint64(0); epoch < 3; epoch++ {
		want := map[string][]uint64{
			"sequential":   Sequential(all),
			"random":       Random(all, 5+epoch),
			"quasi_random": QuasiRandom(all, pageOf8, 3, 5+epoch),
		}
		for name, w := range want {
			got, err := Mix(parts, name, pageOf8, 3, 5, epoch)
			if err != nil || !slices.Equal(got, w) {
				t.Errorf("%s epoch %d: %v (%v), want %v", name, epoch, got, err, w)
			}
		}
	}
}

// TestMixSequentialConcatenates: parts in their order, each in its
// stream's order, continuing where the previous epoch stopped.
func TestMixSequentialConcatenates(t *testing.T) {
	parts := []Part{{0, 5, 3}, {5, 4, 6}}
	cases := []struct {
		epoch uint64
		want  []uint64
	}{
		{0, []uint64{0, 1, 2, 5, 6, 7, 8, 5, 6}},
		{1, []uint64{3, 4, 0, 7, 8, 5, 6, 7, 8}},
		{2, []uint64{1, 2, 3, 5, 6, 7, 8, 5, 6}},
	}
	for _, c := range cases {
		if got, _ := Mix(parts, "sequential", nil, 1, 0, c.epoch); !slices.Equal(got, c.want) {
			t.Errorf("epoch %d: %v, want %v", c.epoch, got, c.want)
		}
	}
}

// TestMixUpsampledPassesDiffer: every pass of an upsampled part is shuffled
// afresh, and the random order mixes the parts.
func TestMixUpsampledPassesDiffer(t *testing.T) {
	p := Part{Start: 100, Size: 50, Take: 150}
	for _, name := range []string{"random", "quasi_random"} {
		a, b := p.pass(0, 0, name, pageOf8, 1), p.pass(0, 1, name, pageOf8, 1)
		if slices.Equal(a, b) || !sameMultiset(a, b) {
			t.Errorf("%s: passes 0 and 1 are the same permutation", name)
		}
		if c := p.pass(1, 0, name, pageOf8, 1); slices.Equal(a, c) {
			t.Errorf("%s: parts 0 and 1 share their passes' permutations", name)
		}
	}
	got, _ := Mix([]Part{{0, 100, 100}, {100, 100, 100}}, "random", nil, 1, 1, 0)
	if first := got[:50]; !slices.ContainsFunc(first, func(id uint64) bool { return id >= 100 }) ||
		!slices.ContainsFunc(first, func(id uint64) bool { return id < 100 }) {
		t.Errorf("random: the first 50 samples come from one part: %v", first)
	}
}

// TestMixQuasiRandomTakesWholePages: a downsampled part's samples of an
// epoch lie on few pages (whole pages, plus at most one partly taken at
// each end of each partial pass), and the epoch's order keeps locality.
func TestMixQuasiRandomTakesWholePages(t *testing.T) {
	p := Part{Start: 0, Size: 800, Take: 100} // 100 pages of 8, an epoch takes 100 samples
	for epoch := uint64(0); epoch < 10; epoch++ {
		got, err := Mix([]Part{p}, "quasi_random", pageOf8, 2, 4, epoch)
		if err != nil {
			t.Fatal(err)
		}
		pages := map[uint32]bool{}
		for _, id := range got {
			pages[pageOf8(id)] = true
		}
		if len(pages) > 100/8+2 {
			t.Errorf("epoch %d: %d samples on %d pages, want at most %d", epoch, len(got), len(pages), 100/8+2)
		}
		if pt := PagesTouched(got, pageOf8, 8); pt > 3 {
			t.Errorf("epoch %d: %v pages per 8 samples", epoch, pt)
		}
	}
	r, _ := Mix([]Part{p}, "random", pageOf8, 2, 4, 0)
	pages := map[uint32]bool{}
	for _, id := range r {
		pages[pageOf8(id)] = true
	}
	if len(pages) < 50 {
		t.Errorf("random: 100 samples on only %d pages; the check above would not tell", len(pages))
	}
}

// TestMixElasticResume: a mixture's global order (with repeated samples)
// is cut, resumed at another world size and batch size, and the samples
// the ranks read make up the epoch exactly.
func TestMixElasticResume(t *testing.T) {
	global, err := Mix(mixtures[3].parts, "random", nil, 1, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ world, bs, batches, world2, bs2 int }{{2, 4, 3, 3, 2}, {1, 8, 2, 4, 3}, {4, 2, 1, 1, 5}} {
		t.Run(fmt.Sprintf("%d×%d→%d×%d", c.world, c.bs, c.world2, c.bs2), func(t *testing.T) {
			var read []uint64
			for r := range c.world {
				read = append(read, Distribute(global, r, c.world)[:c.batches*c.bs]...)
			}
			rest, err := Remaining(global, []Stage{{Strided, c.world, c.bs, false, c.batches}})
			if err != nil {
				t.Fatal(err)
			}
			for r := range c.world2 {
				read = append(read, Resume(rest, r, c.world2, c.bs2, false)...)
			}
			if !sameMultiset(read, global) {
				t.Errorf("the ranks read %d samples, not the epoch's %d once each", len(read), len(global))
			}
		})
	}
}

func TestMixRefuses(t *testing.T) {
	cases := []struct {
		parts []Part
		name  string
		epoch uint64
		want  string
	}{
		{[]Part{{0, 3, 3}}, "shuffled", 0, `unknown order "shuffled"`},
		{[]Part{{0, 3, 3}, {3, 0, 2}}, "random", 0, "part 1 has no samples"},
		{[]Part{{0, 3, 1 << 40}}, "random", 1 << 30, "past 2^62"},
		{[]Part{{0, 3, 1 << 41}}, "random", 0, "2^40"},
	}
	for _, c := range cases {
		if _, err := Mix(c.parts, c.name, nil, 1, 0, c.epoch); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %s: %v, want %q", c.parts, c.name, err, c.want)
		}
	}
}
