package order

import (
	"slices"
	"testing"
)

// lists is what each rank of a fresh epoch reads: Distribute's or Block's cut.
func lists(global []uint64, layout Layout, world int) [][]uint64 {
	out := make([][]uint64, world)
	for r := range out {
		if layout == Blocked {
			out[r] = Block(global, r, world)
		} else {
			out[r] = Distribute(global, r, world)
		}
	}
	return out
}

// taken is the first batches*batchSize ids of every list.
func taken(ls [][]uint64, batches, batchSize int) map[uint64]bool {
	seen := map[uint64]bool{}
	for _, l := range ls {
		for _, id := range l[:min(batches*batchSize, len(l))] {
			seen[id] = true
		}
	}
	return seen
}

func without(global []uint64, seen map[uint64]bool) []uint64 {
	var out []uint64
	for _, id := range global {
		if !seen[id] {
			out = append(out, id)
		}
	}
	return out
}

// TestRemainingMatchesTheRanksLists cuts orders as a run would, lets every
// rank take some batches, and checks Remaining against the ids not read
// (ids are distinct here, so "not read" is unambiguous).
func TestRemainingMatchesTheRanksLists(t *testing.T) {
	for _, n := range []int{0, 1, 5, 17, 64, 101} {
		global := Random(makeIndices("range", n), uint64(n))
		for _, layout := range []Layout{Strided, Blocked} {
			for world := 1; world <= 9; world++ {
				for _, bs := range []int{1, 3, 8} {
					for _, drop := range []bool{false, true} {
						ls := lists(global, layout, world)
						nb := batches(len(ls[0]), bs, drop)
						for b := 0; b <= nb; b++ {
							st := []Stage{{layout, world, bs, drop, b}}
							got, err := Remaining(global, st)
							if err != nil {
								t.Fatalf("%v: %v", st, err)
							}
							want := without(global, taken(ls, b, bs))
							if !slices.Equal(got, want) {
								t.Fatalf("n=%d %v: got %v, want %v", n, st, got, want)
							}
						}
						if _, err := Remaining(global, []Stage{{layout, world, bs, drop, nb + 1}}); err == nil {
							t.Fatalf("n=%d %s world %d: %d batches of %d accepted", n, layout, world, nb+1, bs)
						}
					}
				}
			}
		}
	}
}

// TestResumeSplitsTheRestOnce checks that the new ranks' lists are the rest,
// each sample once, with equal batch counts wherever the rule promises them.
func TestResumeSplitsTheRestOnce(t *testing.T) {
	for _, m := range []int{0, 1, 2, 7, 30, 31, 97} {
		rest := makeIndices("spread", m)
		for world := 1; world <= 9; world++ {
			for _, bs := range []int{1, 4, 5} {
				for _, drop := range []bool{false, true} {
					var all []uint64
					var counts []int
					for r := range world {
						l := Resume(rest, r, world, bs, drop)
						all = append(all, l...)
						counts = append(counts, batches(len(l), bs, drop))
					}
					step := world * bs
					if drop {
						if !slices.Equal(all, rest[:m/step*step]) {
							t.Fatalf("m=%d world=%d bs=%d drop: got %v", m, world, bs, all)
						}
					} else if !slices.Equal(all, rest) {
						t.Fatalf("m=%d world=%d bs=%d: got %v, want %v", m, world, bs, all, rest)
					}
					lastStep := m % step
					if drop || lastStep == 0 || lastStep >= world {
						for _, c := range counts {
							if c != counts[0] {
								t.Fatalf("m=%d world=%d bs=%d drop=%v: batch counts %v", m, world, bs, drop, counts)
							}
						}
					}
				}
			}
		}
	}
}

// TestRemainingAfterAResumedRun chains stages: a run at world 4 saves, a
// run at world 3 resumes and saves again, and Remaining knows what is left.
func TestRemainingAfterAResumedRun(t *testing.T) {
	global := Random(makeIndices("range", 103), 9)
	first := Stage{Strided, 4, 5, false, 2}
	rest, err := Remaining(global, []Stage{first})
	if err != nil {
		t.Fatal(err)
	}
	seen := taken(lists(global, Strided, 4), 2, 5)
	var second [][]uint64
	for r := range 3 {
		second = append(second, Resume(rest, r, 3, 4, false))
	}
	for id := range taken(second, 3, 4) {
		seen[id] = true
	}
	got, err := Remaining(global, []Stage{first, {Rest, 3, 4, false, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if want := without(global, seen); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Resuming again with the same shape continues the same lists.
	for r := range 3 {
		if again := Resume(got, r, 3, 4, false); !slices.Equal(again, second[r][12:]) {
			t.Fatalf("rank %d: resumed %v, the run had %v", r, again, second[r][12:])
		}
	}
}

func TestRemainingRefusesBadStages(t *testing.T) {
	global := makeIndices("range", 10)
	for _, st := range [][]Stage{
		{{Rest, 2, 2, false, 1}},
		{{Strided, 2, 2, false, 1}, {Blocked, 2, 2, false, 1}},
		{{"diagonal", 2, 2, false, 1}},
		{{Strided, 0, 2, false, 1}},
		{{Strided, 2, 0, false, 1}},
		{{Strided, 2, 2, false, -1}},
		{{Strided, 2, 2, false, 1}, {Rest, 2, 2, false, 3}},
	} {
		if _, err := Remaining(global, st); err == nil {
			t.Errorf("%v: accepted", st)
		}
	}
}

func TestFingerprint(t *testing.T) {
	a := makeIndices("range", 100)
	b := slices.Clone(a)
	b[3], b[4] = b[4], b[3]
	if Fingerprint(a) != Fingerprint(slices.Clone(a)) || Fingerprint(a) == Fingerprint(b) ||
		Fingerprint(a) == Fingerprint(a[:99]) {
		t.Fatal("fingerprint does not tell orders apart")
	}
}
