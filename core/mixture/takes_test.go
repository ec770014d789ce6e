package mixture

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func f(x float64) *float64 { return &x }
func i(x int64) *int64     { return &x }

func sources(ws ...Source) []Source { return ws }

// TestTakes: the samples each source gives an epoch, for every way of
// weighting, as Streaming's Stream defines them (largest remainder for the
// rounding) and litdata's normalized weights.
func TestTakes(t *testing.T) {
	cases := []struct {
		name  string
		spec  Spec
		sizes []uint64
		want  []uint64
	}{
		{"unweighted: each once", Spec{Sources: sources(Source{}, Source{})}, []uint64{10, 7}, []uint64{10, 7}},
		{"unweighted with epoch size: by size", Spec{Sources: sources(Source{}, Source{}), EpochSize: 34}, []uint64{10, 7}, []uint64{20, 14}},
		{"proportions, epoch of the sizes' sum", Spec{Sources: sources(Source{Proportion: f(0.6)}, Source{Proportion: f(0.3)}, Source{Proportion: f(0.1)})},
			[]uint64{100, 100, 100}, []uint64{180, 90, 30}},
		{"proportions, given epoch size", Spec{Sources: sources(Source{Proportion: f(0.5)}, Source{Proportion: f(0.5)}), EpochSize: 11},
			[]uint64{3, 1000}, []uint64{6, 5}},
		{"proportions summing to 1 in floating point", Spec{Sources: sources(Source{Proportion: f(0.1)}, Source{Proportion: f(0.2)}, Source{Proportion: f(0.7)})},
			[]uint64{10, 10, 10}, []uint64{3, 6, 21}},
		{"largest remainder, ties to the lower index", Spec{Sources: sources(Source{Proportion: f(1.0 / 3)}, Source{Proportion: f(1.0 / 3)}, Source{Proportion: f(1.0 / 3)}), EpochSize: 10},
			[]uint64{5, 5, 5}, []uint64{4, 3, 3}},
		{"weights, normalized", Spec{Sources: sources(Source{}, Source{}, Source{}), Weights: []float64{6, 3, 1}},
			[]uint64{50, 20, 30}, []uint64{60, 30, 10}},
		{"repeat, fractions rounded down", Spec{Sources: sources(Source{Repeat: f(2)}, Source{Repeat: f(0.55)}, Source{})},
			[]uint64{10, 9, 4}, []uint64{20, 4, 4}},
		{"choose", Spec{Sources: sources(Source{Choose: i(25)}, Source{Choose: i(1)})}, []uint64{10, 9}, []uint64{25, 1}},
		{"proportion beside repeat", Spec{Sources: sources(Source{Repeat: f(2)}, Source{Proportion: f(0.7)})},
			[]uint64{30, 1000}, []uint64{60, 140}},
		{"proportions beside an unweighted source", Spec{Sources: sources(Source{}, Source{Proportion: f(0.25)}, Source{Proportion: f(0.25)})},
			[]uint64{50, 3, 3}, []uint64{50, 25, 25}},
		{"side source (proportion 0): takes 0, the others as without it", Spec{Sources: sources(Source{Proportion: f(0.7)}, Source{Proportion: f(0)}, Source{Proportion: f(0.3)})},
			[]uint64{100, 50, 100}, []uint64{140, 0, 60}},
		{"side source (weight 0)", Spec{Sources: sources(Source{}, Source{}, Source{}), Weights: []float64{1, 0, 1}},
			[]uint64{10, 5, 10}, []uint64{10, 0, 10}},
		{"side sources (repeat 0, choose 0) beside an unweighted one", Spec{Sources: sources(Source{Repeat: f(0)}, Source{}, Source{Choose: i(0)})},
			[]uint64{10, 7, 3}, []uint64{0, 7, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Takes(c.spec, c.sizes)
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("got %v (%v), want %v", got, err, c.want)
			}
		})
	}
}

// TestTakesSumExactly: relative takes add up to the epoch size for awkward
// weights and sizes.
func TestTakesSumExactly(t *testing.T) {
	for size := int64(1); size < 400; size += 37 {
		spec := Spec{Sources: sources(Source{}, Source{}, Source{}, Source{}), Weights: []float64{0.123, 7, 1e-3 * float64(size), 2.5},
			EpochSize: size * 31}
		got, err := Takes(spec, []uint64{5, 6, 7, 8})
		if err != nil {
			if strings.Contains(err.Error(), "less than one sample") {
				continue
			}
			t.Fatal(err)
		}
		var sum uint64
		for _, x := range got {
			sum += x
		}
		if sum != uint64(spec.EpochSize) {
			t.Fatalf("epoch size %d: takes %v sum to %d", spec.EpochSize, got, sum)
		}
	}
}

// TestTakesRefuses: bad weights fail with ErrMixture and a message saying
// which source and what is wrong.
func TestTakesRefuses(t *testing.T) {
	cases := []struct {
		name  string
		spec  Spec
		sizes []uint64
		want  string
	}{
		{"negative proportion", Spec{Sources: sources(Source{Proportion: f(-0.5)}, Source{Proportion: f(1.5)})}, []uint64{1, 1}, "source 0 (): proportion -0.5 must be a positive number"},
		{"negative weight", Spec{Sources: sources(Source{Name: "a"}, Source{Name: "b"}), Weights: []float64{1, -1}}, []uint64{1, 1}, "weight -1 of source 1 (b) must be a positive number (or 0: read by operations only)"},
		{"every source of weight 0", Spec{Sources: sources(Source{Name: "a", Proportion: f(0)}, Source{Name: "b", Choose: i(0)})}, []uint64{1, 1}, "every source has weight 0"},
		{"after a side source, named by its place", Spec{Sources: sources(Source{Name: "noise"}, Source{Name: "tiny"}, Source{}), Weights: []float64{0, 1e-6, 1}},
			[]uint64{10, 10, 10}, "source 1 (tiny): its share 1e-06 of an epoch of 20 samples is less than one sample"},
		{"NaN weight", Spec{Sources: sources(Source{Name: "a"}), Weights: []float64{math.NaN()}}, []uint64{1}, "weight NaN of source 0 (a)"},
		{"infinite repeat", Spec{Sources: sources(Source{Name: "a", Repeat: f(math.Inf(1))})}, []uint64{1}, "repeat +Inf must be a positive number"},
		{"negative choose", Spec{Sources: sources(Source{Name: "a", Choose: i(-1)})}, []uint64{1}, "choose -1 must be"},
		{"two weights on a source", Spec{Sources: sources(Source{Name: "a", Repeat: f(1), Choose: i(3)})}, []uint64{1}, "at most one of proportion, repeat and choose"},
		{"weights and proportions", Spec{Sources: sources(Source{Name: "a", Proportion: f(1)}), Weights: []float64{1}}, []uint64{1}, "give one or the other"},
		{"weights count", Spec{Sources: sources(Source{}, Source{}), Weights: []float64{1}}, []uint64{1, 1}, "1 weights for 2 sources"},
		{"proportions not summing to 1", Spec{Sources: sources(Source{Proportion: f(0.6)}, Source{Proportion: f(0.3)})}, []uint64{10, 10}, "the proportions sum to 0.9, not 1"},
		{"proportions reaching 1 beside repeat", Spec{Sources: sources(Source{Proportion: f(1)}, Source{Repeat: f(1)})}, []uint64{10, 10}, "must sum to less than 1"},
		{"epoch size with repeat", Spec{Sources: sources(Source{Repeat: f(1)}), EpochSize: 10}, []uint64{10}, "epoch_size applies to proportions"},
		{"share below one sample", Spec{Sources: sources(Source{Name: "tiny"}, Source{}), Weights: []float64{1e-6, 1}}, []uint64{10, 10}, "source 0 (tiny): its share 1e-06 of an epoch of 20 samples is less than one sample"},
		{"repeat below one sample", Spec{Sources: sources(Source{Name: "a", Repeat: f(0.1)})}, []uint64{5}, "repeat 0.1 of 5 samples is less than one sample"},
		{"a source with no samples", Spec{Sources: sources(Source{Name: "a"}, Source{Name: "empty"})}, []uint64{5, 0}, "source 1 (empty) has no samples"},
		{"negative epoch size", Spec{Sources: sources(Source{}), EpochSize: -1}, []uint64{5}, "epoch_size -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Takes(c.spec, c.sizes)
			if !errors.Is(err, ErrMixture) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an ErrMixture with %q", err, c.want)
			}
		})
	}
}
