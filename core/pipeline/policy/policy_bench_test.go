package policy

import (
	"sync/atomic"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// BenchmarkPolicyOps times each operation of RandAugment's set at its
// default magnitude (bin 9 of 31, positive sign) on a 224×224 RGB image, the
// size it sees after RandomResizedCrop(224).
func BenchmarkPolicyOps(b *testing.B) {
	const h, w, c = 224, 224, 3
	src := testimg.PhotoLike(h, w, c)
	img, tmp := make([]byte, len(src)), make([]byte, len(src))
	for _, interp := range []string{"nearest", "bilinear"} {
		g := geom{bilinear: interp == "bilinear"}
		for _, op := range raOps {
			geometric := op >= opShearX && op <= opRotate
			if interp == "bilinear" && !geometric {
				continue
			}
			m, _ := spaceRA.magnitude(op, 9, 31, h, w)
			tabs := newTables() // as RandAugment builds them
			tabs.addBin(spaceRA, op, 9, 31)
			name := augOps[op]
			if geometric {
				name += "/" + interp
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				for i := 0; i < b.N; i++ {
					copy(img, src)
					applyAug(img, tmp, h, w, c, op, m, g, tabs)
				}
			})
		}
	}
}

// BenchmarkRandAugment times RandAugment(2, 9) per 224×224 image, over the
// draws of successive samples.
func BenchmarkRandAugment(b *testing.B) {
	const h, w, c = 224, 224, 3
	op, err := pipeline.New(pipeline.Env{}, []byte(`{"op": "rand_augment", "num_ops": 2, "magnitude": 9}`))
	if err != nil {
		b.Fatal(err)
	}
	in := pipeline.Spec{Shape: []int{h, w, c}, DType: "|u1"}
	if _, err := op.Out(in); err != nil {
		b.Fatal(err)
	}
	src := testimg.PhotoLike(h, w, c)
	out := make([]byte, len(src))
	ctx := pipeline.NewCtx()
	defer ctx.Close()
	ctx.Seed = 1
	b.SetBytes(int64(len(src)))
	b.ResetTimer() // building the op, its tables included, is not a sample's work
	for i := 0; i < b.N; i++ {
		ctx.Pos, ctx.Sample = uint64(i), uint64(i)
		if err := op.Run(ctx, 0, src, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPolicies times each policy per 224×224 image over the draws of
// successive samples, run by one worker and by GOMAXPROCS workers sharing
// the op (which must not serialise them).
func BenchmarkPolicies(b *testing.B) {
	const h, w, c = 224, 224, 3
	src := testimg.PhotoLike(h, w, c)
	for _, tc := range []struct{ name, spec string }{
		{"RandAugment", `{"op": "rand_augment", "num_ops": 2, "magnitude": 9}`},
		{"TrivialAugmentWide", `{"op": "trivial_augment_wide"}`},
		{"AutoAugment", `{"op": "auto_augment", "policy": "imagenet"}`},
		{"AugMix", `{"op": "augmix"}`},
	} {
		op, err := pipeline.New(pipeline.Env{}, []byte(tc.spec))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := op.Out(optest.ImgSpec(h, w, c)); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			out := make([]byte, len(src))
			ctx := pipeline.NewCtx()
			ctx.Seed = 1
			b.SetBytes(int64(len(src)))
			for i := 0; i < b.N; i++ {
				ctx.Pos, ctx.Sample = uint64(i), uint64(i)
				if err := op.Run(ctx, 0, src, out); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/parallel", func(b *testing.B) {
			var next atomic.Uint64
			b.SetBytes(int64(len(src)))
			b.RunParallel(func(pb *testing.PB) {
				out := make([]byte, len(src))
				ctx := pipeline.NewCtx()
				ctx.Seed = 1
				for pb.Next() {
					i := next.Add(1)
					ctx.Pos, ctx.Sample = i, i
					if err := op.Run(ctx, 0, src, out); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
