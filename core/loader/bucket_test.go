package loader

import (
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/audioenc"
	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/order"
)

// clipFrames is sample i's length: 1 to 40 frames, short ones more common.
func clipFrames(i int) int { return 1 + (i*i*7+i*3)%40*(i%3+1)/3 }

// writeClips writes n samples: wave (Bytes, clipFrames(i) bytes of value
// i, zero-padded to the longest when decoded), frames (Int) and seconds
// (Float, frames / 10).
func writeClips(t testing.TB, n int) *beton.Reader {
	t.Helper()
	descs := []field.Desc{{Type: field.Bytes, Name: "wave"}, {Type: field.Int, Name: "frames"},
		{Type: field.Float, Name: "seconds"}}
	encs := make([]field.Encoder, len(descs))
	for k, d := range descs {
		var err error
		if encs[k], err = field.NewEncoder(d); err != nil {
			t.Fatal(err)
		}
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "clips.beton"), descs, encs, n, func(i int) []field.Value {
		f := clipFrames(i)
		return []field.Value{{Data: []byte(strings.Repeat(string(rune(i%100+1)), f))}, {Int: int64(f)},
			{Float: float64(f) / 10}}
	})
	return betontest.Open(t, path)
}

var clipPipeline = map[string][]string{"wave": {`{"op":"bytes"}`}, "frames": {`{"op":"int"}`}}

func bucketConfig(world, rank int) Config {
	return Config{BatchSize: 16, Workers: 2, BatchesAhead: 2, Seed: 9, Order: "bucketed", OSCache: true,
		World: world, Rank: rank, DurationField: "frames", MaxDuration: 100, NumBuckets: 4}
}

// frameCounts reads a batch's frames output (int64 per sample).
func frameCounts(c copied) []int {
	out := make([]int, len(c.bufs[1])/8)
	for i := range out {
		out[i] = int(binary.LittleEndian.Uint64(c.bufs[1][8*i:]))
	}
	return out
}

// TestBucketedLoader: every sample once per epoch, in batches of at most
// max_duration frames and 16 samples whose sizes vary, each sample's wave
// in its row (padded with zeros past its frames); per-rank totals within
// max_duration of each other; resuming at a middle batch gives the rest of
// the same epoch.
func TestBucketedLoader(t *testing.T) {
	const n = 203
	r := writeClips(t, n)
	cases := []struct {
		name    string
		world   int
		field   string
		maxDur  float64
		drop    bool
		buckets int
	}{
		{"one rank", 1, "frames", 100, false, 4},
		{"seconds", 1, "seconds", 10, false, 4},
		{"two ranks", 2, "frames", 100, false, 4},
		{"three ranks drop last", 3, "frames", 60, true, 8},
		{"one bucket", 1, "frames", 150, false, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			count := map[uint64]int{}
			sizes := map[int]bool{}
			var totals []float64
			var global [][]uint64
			for rank := range c.world {
				cfg := bucketConfig(c.world, rank)
				cfg.DurationField, cfg.MaxDuration, cfg.DropLast, cfg.NumBuckets = c.field, c.maxDur, c.drop, c.buckets
				l := newLoader(t, r, cfg, clipPipeline)
				global = l.GlobalBatches(1)
				got := epoch(t, l, 1, 0)
				if nb, _ := l.Batches(1); nb != len(got) {
					t.Fatalf("rank %d: Batches says %d, the epoch had %d", rank, nb, len(got))
				}
				var total float64
				for _, b := range got {
					ids, frames := b.ids(), frameCounts(b)
					sizes[len(ids)] = true
					if len(ids) > cfg.BatchSize {
						t.Fatalf("batch %d: %d samples", b.index, len(ids))
					}
					var sum float64
					width := len(b.bufs[0]) / len(ids)
					for k, id := range ids {
						count[id]++
						f := clipFrames(int(id))
						if frames[k] != f {
							t.Fatalf("sample %d: frames %d, want %d", id, frames[k], f)
						}
						row := b.bufs[0][k*width : (k+1)*width]
						if row[0] != byte(id%100+1) || row[f-1] != row[0] || (f < width && row[f] != 0) {
							t.Fatalf("sample %d: wave row is not its own, zero-padded past %d", id, f)
						}
						sum += l.durations[id]
					}
					if sum > c.maxDur {
						t.Fatalf("batch %d: total duration %v > %v", b.index, sum, c.maxDur)
					}
					total += sum
				}
				totals = append(totals, total)
				if rank == 0 && len(got) > 2 {
					k := len(got) / 2
					sameEpochs(t, "resumed at a middle batch", got[k:], epoch(t, l, 1, k))
				}
			}
			if len(sizes) < 2 {
				t.Errorf("every batch had the same size: %v", sizes)
			}
			// Each sample once; a last step short of ranks is dropped, or
			// filled up with the epoch's first batches again.
			want := map[uint64]int{}
			steps := len(global) / c.world
			if !c.drop && len(global)%c.world != 0 {
				steps++
			}
			for k := range steps * c.world {
				for _, id := range global[k%len(global)] {
					want[id]++
				}
			}
			for id := range uint64(n) {
				if count[id] != want[id] || (want[id] == 0 && !c.drop) {
					t.Fatalf("sample %d taken %d times, want %d", id, count[id], want[id])
				}
			}
			for _, tot := range totals {
				if tot-totals[0] > c.maxDur || totals[0]-tot > c.maxDur {
					t.Errorf("rank totals %v differ by more than %v", totals, c.maxDur)
				}
			}
		})
	}
}

// TestBucketedElasticLoader takes 3 batches per rank at world 2, then
// finishes the epoch at world 3 from ResumeBatches: every sample once.
func TestBucketedElasticLoader(t *testing.T) {
	const n, taken = 150, 3
	r := writeClips(t, n)
	count := map[uint64]int{}
	var layout order.Layout
	for rank := range 2 {
		l := newLoader(t, r, bucketConfig(2, rank), clipPipeline)
		layout = l.Layout()
		for _, b := range epoch(t, l, 4, 0)[:taken] {
			for _, id := range b.ids() {
				count[id]++
			}
		}
	}
	if layout != order.Batched {
		t.Fatalf("layout %q", layout)
	}
	stages := []order.Stage{{Layout: layout, World: 2, BatchSize: 16, Batches: taken}}
	var left []uint64 // what drop_last leaves: fewer batches than ranks
	for rank := range 3 {
		cfg := bucketConfig(3, rank)
		cfg.DropLast = true
		l := newLoader(t, r, cfg, clipPipeline)
		global := l.GlobalBatches(4)
		left = left[:0]
		for _, b := range global[2*taken+(len(global)-2*taken)/3*3:] {
			left = append(left, b...)
		}
		ord, bounds, _, err := l.ResumeBatches(4, stages)
		if err != nil {
			t.Fatal(err)
		}
		it, err := l.Start(4, 0, ord, true)
		if err != nil {
			t.Fatal(err)
		}
		if it.Len() != len(bounds)-1 {
			t.Fatalf("rank %d: %d batches, ResumeBatches cut %d", rank, it.Len(), len(bounds)-1)
		}
		for b, err := it.Next(); b != nil || err != nil; b, err = it.Next() {
			if err != nil {
				t.Fatal(err)
			}
			c := copyBatch(l, b)
			b.Release()
			for _, id := range c.ids() {
				count[id]++
			}
		}
		it.Close()
	}
	for id := range uint64(n) {
		if count[id] != 1 && !(count[id] == 0 && slices.Contains(left, id)) {
			t.Fatalf("sample %d taken %d times over the two runs", id, count[id])
		}
	}
}

func TestBucketedErrors(t *testing.T) {
	r := writeClips(t, 30)
	cases := []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.DurationField = "length" }, `duration field "length" is not a field`},
		{func(c *Config) { c.DurationField = "wave" }, "is a BytesField: durations are read from an IntField, a FloatField or an AudioField"},
		{func(c *Config) { c.DurationField = "" }, "needs a duration field"},
		{func(c *Config) { c.MaxDuration = 20 }, "has duration 35, more than max_duration 20"},
		{func(c *Config) { c.MaxDuration = 0 }, "max_duration 0 must be a positive"},
		{func(c *Config) { c.NumBuckets = 0 }, "num_buckets 0 must be positive"},
	}
	for _, c := range cases {
		cfg := bucketConfig(1, 0)
		c.edit(&cfg)
		_, err := New(r, cfg, build(t, r, clipPipeline))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	l := newLoader(t, r, bucketConfig(2, 0), clipPipeline)
	if _, err := l.Start(0, 0, []uint64{1, 2, 3}, true); err == nil || !strings.Contains(err.Error(), "not made of the bucketed batches") {
		t.Errorf("an order of other batches: %v", err)
	}
}

// Durations reads an IntField's or FloatField's values, or an AudioField's
// clips' seconds (frames / sample rate) from their metadata.
func TestDurations(t *testing.T) {
	frames := []int{800, 2000, 1, 1500}
	rates := []int{1000, 1000, 8000, 500}
	descs := []field.Desc{{Type: field.Audio, Name: "audio", Audio: &field.AudioArgs{Storage: "source"}},
		{Type: field.Int, Name: "frames"}}
	aenc, err := audioenc.NewEncoder(descs[0], audioenc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ienc, err := field.NewEncoder(descs[1])
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "audio.beton"), descs, []field.Encoder{aenc, ienc}, len(frames),
		func(i int) []field.Value {
			return []field.Value{{Data: make([]byte, 2*frames[i]), Channels: 1, Int: int64(rates[i]), Width: audioenc.Int16},
				{Int: int64(frames[i])}}
		})
	r := betontest.Open(t, path)
	for _, tc := range []struct {
		name string
		want []float64
	}{
		{"audio", []float64{0.8, 2, 1.0 / 8000, 3}},
		{"frames", []float64{800, 2000, 1, 1500}},
	} {
		got, err := Durations(r, tc.name)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
