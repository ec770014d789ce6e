package loader

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// TestTailMatchesFusedProgram splits an image pipeline at every point: the
// head runs in the workers, the rest as a tail on the finished batch (as
// after a Python stage). With each op keeping its key, every batch equals the
// fused program's.
func TestTailMatchesFusedProgram(t *testing.T) {
	r := betontest.Open(t, writeImages(t, t.TempDir(), "img.beton", 21, "raw"))
	ops := []string{`{"op":"rgb_simple"}`, `{"op":"flip_h","p":0.5}`, `{"op":"translate","padding":2,"fill":[1,2,3]}`,
		`{"op":"cutout","size":2,"fill":[0,0,0]}`, `{"op":"brightness","magnitude":0.6,"p":0.6}`,
		`{"op":"grayscale","p":0.3}`, `{"op":"image_mixup","alpha":0.5,"same_lambda":false}`}
	cfg := Config{BatchSize: 4, Workers: 3, Seed: 11, Order: "random", BatchesAhead: 2}
	want := epoch(t, newLoader(t, r, cfg, map[string][]string{"image": ops}), 1, 0)
	for split := 1; split < len(ops); split++ {
		t.Run(fmt.Sprintf("split at %d", split), func(t *testing.T) {
			keyed := make([]json.RawMessage, len(ops))
			for k, op := range ops {
				keyed[k] = json.RawMessage(fmt.Sprintf(`{"key":%d,%s`, k, op[1:]))
			}
			head, err := pipeline.Build(r, 0, keyed[:split])
			if err != nil {
				t.Fatal(err)
			}
			tail, err := pipeline.BuildTail(r, 0, head.Out, keyed[split:])
			if err != nil {
				t.Fatal(err)
			}
			l, err := New(r, cfg, []*pipeline.Program{head})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			got := epoch(t, l, 1, 0)
			if len(got) != len(want) {
				t.Fatalf("%d batches, want %d", len(got), len(want))
			}
			for b := range got {
				ids := got[b].ids()
				out := make([]byte, len(ids)*tail.Out.Bytes())
				if err := l.RunTail(tail, 1, b, ids, got[b].bufs[0], out); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, want[b].bufs[0]) {
					t.Fatalf("batch %d differs from the fused program", b)
				}
			}
		})
	}
}

func TestTailRejectsBadInput(t *testing.T) {
	r := betontest.Open(t, writeImages(t, t.TempDir(), "img.beton", 4, "raw"))
	in := pipeline.Spec{Shape: []int{8, 8, 3}, DType: "|u1"}
	for _, c := range []struct {
		name string
		ops  []string
		in   pipeline.Spec
	}{
		{"decoder in a tail", []string{`{"op":"rgb_simple"}`}, in},
		{"no input dtype", []string{`{"op":"flip_h","p":0.5}`}, pipeline.Spec{}},
		{"not an image", []string{`{"op":"flip_h","p":0.5}`}, pipeline.Spec{Shape: []int{3}, DType: "<f4"}},
	} {
		raw := make([]json.RawMessage, len(c.ops))
		for k, op := range c.ops {
			raw[k] = json.RawMessage(op)
		}
		if _, err := pipeline.BuildTail(r, 0, c.in, raw); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	l := newLoader(t, r, Config{BatchSize: 2, Workers: 1, Order: "sequential"}, map[string][]string{"image": {`{"op":"rgb_simple"}`}})
	p, err := pipeline.BuildTail(r, 0, in, []json.RawMessage{json.RawMessage(`{"op":"flip_h","p":0.5}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RunTail(p, 0, 0, []uint64{0, 1}, make([]byte, 10), make([]byte, 2*in.Bytes())); err == nil {
		t.Error("short input accepted")
	}
}
