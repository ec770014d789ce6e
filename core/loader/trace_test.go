package loader

import (
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/trace"
)

// A traced loader sums each stage of every sample it decodes and, in Events
// mode, keeps a span per stage, the process cache's page reads and batch
// operations; its batches are those of an untraced loader.
func TestLoaderTrace(t *testing.T) {
	dir := t.TempDir()
	const n = 150
	r := betontest.Open(t, writeImages(t, dir, "jpg.beton", n, "jpg"))
	crop := map[string][]string{
		"image": {`{"op":"rgb_rrc","size":[6,6],"scale":[0.08,1],"ratio":[0.75,1.3333]}`, `{"op":"flip_h","p":0.5}`},
		"label": {`{"op":"int"}`},
	}
	mixed := map[string][]string{
		"image": append(crop["image"], `{"op":"image_mixup","alpha":0.4,"same_lambda":false}`),
		"label": {`{"op":"int"}`, `{"op":"label_mixup","alpha":0.4,"same_lambda":false}`},
	}
	for _, c := range []struct {
		name    string
		mode    trace.Mode
		osCache bool
		outputs map[string][]string
	}{
		{"off", trace.Off, true, crop},
		{"stages, process cache", trace.Stages, false, crop},
		{"events, OS cache", trace.Events, true, crop},
		{"events, process cache, mixup", trace.Events, false, mixed},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{BatchSize: 16, Workers: 3, BatchesAhead: 2, Order: "random", Seed: 5, OSCache: c.osCache}
			plain := newLoader(t, r, cfg, c.outputs)
			cfg.Trace = c.mode
			l := newLoader(t, r, cfg, c.outputs)
			sameEpochs(t, "traced vs untraced", epoch(t, plain, 0, 0), epoch(t, l, 0, 0))
			st := l.Stats()
			if c.mode == trace.Off {
				if st.Stages != nil || st.Ops != nil || l.TracePending() != 0 {
					t.Fatalf("untraced loader recorded stages %v, ops %v, %d spans", st.Stages, st.Ops, l.TracePending())
				}
				return
			}
			const samples = n // drop_last is off: every sample is decoded
			// Each output's per-sample operations by name, each timed on
			// every sample (batch operations are not per-sample: not there).
			wantOps := [][]string{{"rgb_rrc", "flip_h"}, {"int"}}
			if len(st.Ops) != len(wantOps) {
				t.Fatalf("ops of %d outputs, want %d: %+v", len(st.Ops), len(wantOps), st.Ops)
			}
			for k, names := range wantOps {
				if len(st.Ops[k]) != len(names) {
					t.Fatalf("output %d: ops %+v, want %v", k, st.Ops[k], names)
				}
				for i, name := range names {
					if op := st.Ops[k][i]; op.Op != name || op.Count != samples || op.Ns < 0 {
						t.Errorf("output %d, op %d: %+v, want %s on %d samples", k, i, op, name, samples)
					}
				}
			}
			// idct_resize is every decoder's time less its read and entropy
			// decoding: the label's int decoder's too.
			decoders := st.Ops[0][0].Ns + st.Ops[1][0].Ns
			if stages := st.Stages["entropy_decode"].Ns + st.Stages["idct_resize"].Ns; decoders < stages {
				t.Errorf("the decoders took %d ns, less than their entropy decoding and IDCT (%d ns)", decoders, stages)
			}
			for _, s := range []trace.Stage{trace.Read, trace.Entropy, trace.Decode} {
				if tot := st.Stages[s.String()]; tot.Count != samples || tot.Ns <= 0 {
					t.Errorf("%v: %+v, want %d samples", s, tot, samples)
				}
			}
			if tot := st.Stages["ops"]; tot.Count != samples { // the fused flip still runs
				t.Errorf("ops: %+v", tot)
			}
			if pages := st.Stages["page_read"].Count; (pages > 0) == c.osCache || (pages > 0 && uint64(pages) != st.PagesRead) {
				t.Errorf("%d page reads traced, %d read, OS cache %v", pages, st.PagesRead, c.osCache)
			}
			if batches := st.Stages["batch_ops"].Count; (batches > 0) != (len(c.outputs["label"]) > 1) {
				t.Errorf("%d batch operation spans", batches)
			}
			events := make([]trace.Event, l.TracePending()+10)
			events = events[:l.Trace(events)]
			if c.mode == trace.Stages {
				if len(events) != 0 {
					t.Fatalf("stages mode kept %d spans", len(events))
				}
				return
			}
			perStage := map[trace.Stage]int64{}
			seen := map[uint64]bool{}
			for _, ev := range events {
				perStage[ev.Stage]++
				if ev.Dur < 0 || ev.Start <= 0 {
					t.Fatalf("bad span %+v", ev)
				}
				switch {
				case ev.Track >= 0:
					if ev.Track >= 3 || ev.Arg >= n {
						t.Fatalf("worker span %+v", ev)
					}
					seen[ev.Arg] = true
				case ev.Track == trace.TrackPages && ev.Stage != trace.PageRead,
					ev.Track == trace.TrackBatch && ev.Stage != trace.BatchOps:
					t.Fatalf("span %+v on the wrong track", ev)
				}
			}
			if len(seen) != n {
				t.Errorf("spans name %d samples, want %d", len(seen), n)
			}
			for s, tot := range st.Stages {
				if k := perStage[stageByName(t, s)]; k != tot.Count {
					t.Errorf("%s: %d spans, total counts %d", s, k, tot.Count)
				}
			}
			if l.TracePending() != 0 {
				t.Errorf("%d spans left after draining", l.TracePending())
			}
		})
	}
}

func stageByName(t *testing.T, name string) trace.Stage {
	for s := trace.Stage(0); s < trace.NumStages; s++ {
		if s.String() == name {
			return s
		}
	}
	t.Fatalf("no stage %q", name)
	return 0
}
