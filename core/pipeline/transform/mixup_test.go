package transform

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

func newBatchOp(t *testing.T, name string, args map[string]any) pipeline.BatchOp {
	t.Helper()
	op, err := pipeline.NewBatch(optest.Spec(t, name, args))
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func TestMixupConsistency(t *testing.T) {
	const n, h, w, c = 6, 2, 3, 3
	imgs := make([]byte, n*h*w*c)
	for i := range imgs {
		imgs[i] = byte(i * 53)
	}
	labels := make([]byte, 8*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(labels[8*i:], uint64(10+i))
	}
	sz := h * w * c
	for _, same := range []bool{true, false} {
		for _, alpha := range []float64{0.2, 1, 5} {
			args := map[string]any{"alpha": alpha, "same_lambda": same}
			im, lb := newBatchOp(t, "image_mixup", args), newBatchOp(t, "label_mixup", args)
			if _, err := im.Out(optest.ImgSpec(h, w, c)); err != nil {
				t.Fatal(err)
			}
			if out, err := lb.Out(pipeline.Spec{Shape: []int{1}, DType: "<i8"}); err != nil || out.Bytes() != 12 {
				t.Fatalf("label mixup output %v, %v", out, err)
			}
			bc := &pipeline.BatchCtx{Seed: 3, Epoch: 1, Index: 4}
			gotI, gotL := make([]byte, len(imgs)), make([]byte, 12*n)
			if err := im.RunBatch(bc, imgs, gotI, n); err != nil {
				t.Fatal(err)
			}
			if err := lb.RunBatch(bc, labels, gotL, n); err != nil {
				t.Fatal(err)
			}
			lams := lambdas(bc, alpha, same, n)
			for i := 0; i < n; i++ {
				j := (i + n - 1) % n
				row := gotL[12*i:]
				y := math.Float32frombits(binary.LittleEndian.Uint32(row))
				yp := math.Float32frombits(binary.LittleEndian.Uint32(row[4:]))
				lam := math.Float32frombits(binary.LittleEndian.Uint32(row[8:]))
				if y != float32(10+i) || yp != float32(10+j) {
					t.Fatalf("sample %d: labels [%v %v], want [%d %d]", i, y, yp, 10+i, 10+j)
				}
				if lam != float32(lams[i]) || lam < 0 || lam > 1 {
					t.Fatalf("sample %d: label lambda %v, image lambda %v", i, lam, lams[i])
				}
				if same && lams[i] != lams[0] {
					t.Fatalf("same_lambda: lambdas differ: %v", lams)
				}
				for k := 0; k < sz; k++ {
					a, p := float64(imgs[i*sz+k]), float64(imgs[j*sz+k])
					want := byte(math.Min(255, float64(lams[i]*a)+float64((1-lams[i])*p)))
					if gotI[i*sz+k] != want {
						t.Fatalf("sample %d byte %d: %d, want %d (λ=%v)", i, k, gotI[i*sz+k], want, lams[i])
					}
				}
			}
			if !same && slices.Min(lams) == slices.Max(lams) {
				t.Fatalf("independent lambdas are all equal: %v", lams)
			}
			// The same batch gets the same lambdas; another batch others.
			if again := lambdas(bc, alpha, same, n); !slices.Equal(again, lams) {
				t.Fatal("lambdas are not a function of (seed, epoch, batch)")
			}
			other := lambdas(&pipeline.BatchCtx{Seed: 3, Epoch: 1, Index: 5}, alpha, same, n)
			if slices.Equal(other, lams) {
				t.Fatal("two batches drew the same lambdas")
			}
		}
	}
}
