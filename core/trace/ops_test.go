package trace

import (
	"slices"
	"sync"
	"testing"
)

// Workers' op times reach each program's OpTotals when their Buffer
// flushes, summed per operation, whichever worker ran it.
func TestOpTotals(t *testing.T) {
	type add struct {
		worker, prog, op int
		ns               int64
	}
	for _, c := range []struct {
		name  string
		progs [][]string
		adds  []add
		want  [][]Total
	}{
		{"one worker, one program", [][]string{{"rgb_rrc", "flip_h"}},
			[]add{{0, 0, 0, 100}, {0, 0, 1, 5}, {0, 0, 0, 300}, {0, 0, 1, 7}},
			[][]Total{{{400, 2}, {12, 2}}}},
		{"two workers, two programs", [][]string{{"rgb_rrc", "blur"}, {"int"}},
			[]add{{0, 0, 1, 50}, {1, 0, 1, 70}, {1, 1, 0, 3}, {0, 0, 0, 10}},
			[][]Total{{{10, 1}, {120, 2}}, {{3, 1}}}},
		{"an op never run", [][]string{{"rgb_center", "cutout", "flip_h"}},
			[]add{{0, 0, 0, 9}, {1, 0, 2, 1}},
			[][]Total{{{9, 1}, {}, {1, 1}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := New(Stages, 0)
			totals := make([]*OpTotals, len(c.progs))
			for k, names := range c.progs {
				totals[k] = NewOpTotals(names)
			}
			buffers := []*Buffer{r.Buffer(0), r.Buffer(1)}
			for _, a := range c.adds {
				buffers[a.worker].Ops().Add(totals[a.prog], a.op, a.ns)
			}
			for k := range c.progs {
				for _, got := range totals[k].Totals() {
					if got.Total != (Total{}) {
						t.Fatalf("program %d: %+v before any flush", k, got)
					}
				}
			}
			var times Times
			for _, b := range buffers {
				b.Sample(0, 0, &times) // a Buffer flushes once it holds a sample
				b.Flush()
			}
			for k, names := range c.progs {
				got := totals[k].Totals()
				var gotNames []string
				for i, op := range got {
					gotNames = append(gotNames, op.Op)
					if op.Total != c.want[k][i] {
						t.Errorf("program %d, op %s: %+v, want %+v", k, op.Op, op.Total, c.want[k][i])
					}
				}
				if !slices.Equal(gotNames, names) {
					t.Errorf("program %d: names %v, want %v", k, gotNames, names)
				}
			}
		})
	}
}

func TestOpTimesNil(t *testing.T) {
	var b *Buffer
	b.Ops().Add(NewOpTotals([]string{"x"}), 0, 1) // a nil Buffer's OpTimes records nothing
	b.Ops().Flush()
	var o *OpTotals
	(&OpTimes{}).Add(o, 0, 1)
	if o.Totals() != nil {
		t.Fatal("a nil OpTotals has totals")
	}
}

// Workers flushing concurrently lose nothing (run with -race).
func TestOpTotalsConcurrent(t *testing.T) {
	r := New(Stages, 0)
	o := NewOpTotals([]string{"a", "b"})
	const workers, samples = 4, 1000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := r.Buffer(int32(w))
			var times Times
			for range samples {
				b.Ops().Add(o, 0, 2)
				b.Ops().Add(o, 1, 3)
				b.Sample(0, 0, &times) // flushes every flushEvery samples
			}
			b.Flush()
		}()
	}
	wg.Wait()
	got := o.Totals()
	if got[0].Total != (Total{2 * workers * samples, workers * samples}) || got[1].Total != (Total{3 * workers * samples, workers * samples}) {
		t.Fatalf("totals %+v", got)
	}
}
