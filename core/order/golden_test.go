package order

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The golden files come from testdata/gen_golden.py (numpy and torch).

func loadGolden(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// makeIndices mirrors make_indices in gen_golden.py.
func makeIndices(kind string, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		switch kind {
		case "range":
			out[i] = uint64(i)
		case "spread":
			out[i] = uint64(i)*0x9E3779B97F4A7C15 + 12345
		case "dup":
			out[i] = uint64(i*7) % uint64(n/2+1)
		default:
			panic("unknown kind " + kind)
		}
	}
	return out
}

func digest(a []uint64) string {
	b := make([]byte, 8*len(a))
	for i, v := range a {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestPCG64Golden(t *testing.T) {
	var g struct {
		Cases []struct {
			Seed  uint64
			State []uint64
			Raw   []uint64
		}
	}
	loadGolden(t, "rng.json", &g)
	for _, c := range g.Cases {
		if got := newSeedSequence(c.Seed).generateState64(4); !slices.Equal(got, c.State) {
			t.Errorf("seed %d: generate_state = %v, numpy %v", c.Seed, got, c.State)
		}
		rng := newPCG64(c.Seed)
		for i, want := range c.Raw {
			if got := rng.Uint64(); got != want {
				t.Errorf("seed %d: raw[%d] = %d, numpy %d", c.Seed, i, got, want)
			}
		}
	}
}

func TestRandomGolden(t *testing.T) {
	var g struct {
		Cases []struct {
			Kind             string
			N                int
			Seed             uint64
			SHA256           string
			Full, Head, Tail []uint64
		}
	}
	loadGolden(t, "random.json", &g)
	if len(g.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range g.Cases {
		name := fmt.Sprintf("%s/n=%d/seed=%d", c.Kind, c.N, c.Seed)
		if testing.Short() && c.N > 100000 {
			continue
		}
		got := Random(makeIndices(c.Kind, c.N), c.Seed)
		switch {
		case c.Full != nil && !slices.Equal(got, c.Full):
			t.Errorf("%s: got %v, numpy %v", name, got, c.Full)
		case c.Head != nil && !slices.Equal(got[:len(c.Head)], c.Head):
			t.Errorf("%s: head %v, numpy %v", name, got[:len(c.Head)], c.Head)
		case c.Tail != nil && !slices.Equal(got[len(got)-len(c.Tail):], c.Tail):
			t.Errorf("%s: tail %v, numpy %v", name, got[len(got)-len(c.Tail):], c.Tail)
		case digest(got) != c.SHA256:
			t.Errorf("%s: sha256 %s, numpy %s", name, digest(got), c.SHA256)
		}
	}
}

func TestDistributeGolden(t *testing.T) {
	var g struct {
		Cases []struct {
			Kind    string
			N       int
			World   int
			Shuffle bool
			Seed    uint64
			Epoch   uint64
			Order   []uint64
			Ranks   [][]uint64
		}
	}
	loadGolden(t, "distribute.json", &g)
	if len(g.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range g.Cases {
		if !c.Shuffle && !slices.Equal(c.Order, makeIndices(c.Kind, c.N)) {
			t.Fatalf("%s/n=%d: sequential golden order is not the indices", c.Kind, c.N)
		}
		for r, want := range c.Ranks {
			got := Distribute(c.Order, r, c.World)
			if !slices.Equal(got, want) {
				t.Errorf("%s/n=%d/shuffle=%v/W=%d/rank=%d: got %v, torch %v",
					c.Kind, c.N, c.Shuffle, c.World, r, got, want)
			}
		}
	}
}
