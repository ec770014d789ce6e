package clip

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Which stored frames a clip takes: strides, frame rates and the policies
// for videos shorter than the clip.
func TestIndices(t *testing.T) {
	for _, tc := range []struct {
		name     string
		s        Sampling
		n, start int
		want     []int
	}{
		{"every frame", Sampling{4, 1, Repeat}, 10, 3, []int{3, 4, 5, 6}},
		{"stride 3", Sampling{4, 3, Repeat}, 10, 0, []int{0, 3, 6, 9}},
		{"30 fps stored, 12 wanted", Sampling{5, 2.5, Repeat}, 20, 1, []int{1, 3, 6, 8, 11}},
		{"15 fps stored, 30 wanted", Sampling{4, 0.5, Repeat}, 20, 0, []int{0, 0, 1, 1}},
		{"short: repeat the last frame", Sampling{6, 1, Repeat}, 4, 0, []int{0, 1, 2, 3, 3, 3}},
		{"short: loop", Sampling{6, 1, Loop}, 4, 0, []int{0, 1, 2, 3, 0, 1}},
		{"short: pad", Sampling{6, 1, Pad}, 4, 0, []int{0, 1, 2, 3, -1, -1}},
		{"short with stride: loop", Sampling{4, 2, Loop}, 5, 0, []int{0, 2, 4, 1}},
		{"one frame", Sampling{3, 1, Loop}, 1, 0, []int{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]int, tc.s.Frames)
			tc.s.Indices(got, tc.n, tc.start)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Indices = %v, want %v", got, tc.want)
			}
		})
	}
}

// Random starts cover every start at which the clip fits, uniformly, and
// only those; a short video starts at 0.
func TestRandomStart(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		s    Sampling
		n    int
		last int
	}{
		{Sampling{4, 1, Repeat}, 10, 6},
		{Sampling{4, 3, Repeat}, 10, 0},
		{Sampling{5, 2.5, Repeat}, 40, 29},
		{Sampling{16, 1, Repeat}, 8, 0},
	} {
		counts := make([]int, tc.last+1)
		const draws = 20000
		for i := 0; i < draws; i++ {
			s := tc.s.RandomStart(r, tc.n)
			if s < 0 || s > tc.last {
				t.Fatalf("%+v over %d frames: start %d outside [0, %d]", tc.s, tc.n, s, tc.last)
			}
			counts[s]++
		}
		want := float64(draws) / float64(tc.last+1)
		for s, c := range counts {
			if float64(c) < 0.85*want || float64(c) > 1.15*want {
				t.Fatalf("%+v over %d frames: start %d drawn %d times of %d, want about %.0f", tc.s, tc.n, s, c, draws, want)
			}
		}
	}
}

func TestEvenStarts(t *testing.T) {
	s := Sampling{4, 1, Repeat} // max start 6 in 10 frames
	if got := s.EvenStart(10, 0, 1); got != 3 {
		t.Fatalf("centre clip starts at %d, want 3", got)
	}
	var got []int
	for j := 0; j < 3; j++ {
		got = append(got, s.EvenStart(10, j, 3))
	}
	if !slices.Equal(got, []int{1, 3, 5}) {
		t.Fatalf("3 clips start at %v, want [1 3 5]", got)
	}
	if s.EvenStart(3, 1, 2) != 0 {
		t.Fatal("a short video's clips start at 0")
	}
}

func TestParseShort(t *testing.T) {
	for name, want := range map[string]Short{"repeat": Repeat, "loop": Loop, "pad": Pad, "": Repeat} {
		if got, err := ParseShort(name); err != nil || got != want {
			t.Fatalf("ParseShort(%q) = %v, %v", name, got, err)
		}
	}
	if _, err := ParseShort("wrap"); err == nil {
		t.Fatal("unknown policy accepted")
	}
}
