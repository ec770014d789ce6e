package rgb

import (
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
	"github.com/ffcv-go/ffcv-go/core/trace"
)

// A program run with Ctx.Times set adds each stage's time to it (a JPEG's
// copy to Read, its entropy decoding to Entropy, the rest of the decoder to
// Decode, later operations to Ops) and produces the pixels of an untimed run.
func TestRunTimed(t *testing.T) {
	const w, h = 320, 240
	pix, enc, col := testImage(t, w, h)
	rrc := map[string]any{"size": []int{64, 64}, "scale": []float64{0.08, 1}, "ratio": []float64{0.75, 4.0 / 3}}
	for _, c := range []struct {
		name        string
		col, heap   []byte
		random      bool
		ops         []string
		wantEntropy bool
	}{
		{"jpeg crop, flip, brightness", col(field.ModeJPEG), enc, true, []string{"flip_h", "brightness"}, true},
		{"jpeg centre crop alone", col(field.ModeJPEG), enc, false, nil, true},
		{"raw crop, brightness", col(field.ModeRaw), pix, true, []string{"brightness"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := rrc
			if !c.random {
				args = map[string]any{"size": []int{64, 64}, "ratio": 0.875}
			}
			name := map[bool]string{true: "rgb_rrc", false: "rgb_center"}[c.random]
			named := []optest.Named{{Name: name, Args: args}}
			names := []string{name}
			for _, op := range c.ops {
				a := map[string]any{"p": 1.0}
				if op == "brightness" {
					a["magnitude"] = 0.5
				}
				named, names = append(named, optest.Named{Name: op, Args: a}), append(names, op)
			}
			p := optest.Build(t, optest.Reader(t), optest.ImageField, named...)
			rec := trace.New(trace.Stages, 0)
			worker := rec.Buffer(0)
			run := func(times *trace.Times) []byte {
				ctx := pipeline.NewCtx()
				defer ctx.Close()
				ctx.Seed, ctx.Col, ctx.Heap, ctx.Times = 3, c.col, c.heap, times
				if times != nil {
					ctx.OpTimes = worker.Ops()
				}
				out := make([]byte, p.SampleOut.Bytes())
				var s pipeline.Scratch
				for pos := uint64(0); pos < 10; pos++ {
					ctx.Pos = pos
					if err := p.Run(ctx, &s, nil, out); err != nil {
						t.Fatal(err)
					}
				}
				return out
			}
			want := run(nil)
			var tm trace.Times
			if got := run(&tm); !slices.Equal(got, want) {
				t.Fatal("a timed run changed the output")
			}
			if (tm[trace.Entropy] > 0) != c.wantEntropy || (tm[trace.Read] > 0) != c.wantEntropy {
				t.Errorf("read %d ns, entropy %d ns; want both > 0: %v", tm[trace.Read], tm[trace.Entropy], c.wantEntropy)
			}
			if tm[trace.Decode] <= 0 {
				t.Errorf("decode %d ns", tm[trace.Decode])
			}
			if (tm[trace.Ops] > 0) != (len(c.ops) > 0) {
				t.Errorf("ops %d ns with %d operations", tm[trace.Ops], len(c.ops))
			}
			// Each op's own time, by name, for every sample of the timed run
			// only; the decoder's includes its read and entropy decoding.
			worker.Ops().Flush()
			ops := p.OpTotals()
			if len(ops) != len(names) {
				t.Fatalf("op totals %+v for ops %v", ops, names)
			}
			var sum int64
			for i, op := range ops {
				if op.Op != names[i] || op.Count != 10 || op.Ns < 0 {
					t.Errorf("op %d: %+v, want %s on 10 samples", i, op, names[i])
				}
				sum += op.Ns
			}
			if dec := tm[trace.Read] + tm[trace.Entropy] + tm[trace.Decode]; ops[0].Ns < dec {
				t.Errorf("decoder %d ns, less than its stages' %d ns", ops[0].Ns, dec)
			}
			if sum < tm[trace.Ops] {
				t.Errorf("ops sum to %d ns, less than the Ops stage's %d ns", sum, tm[trace.Ops])
			}
		})
	}
}
