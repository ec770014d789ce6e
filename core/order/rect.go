package order

import (
	"math"
	"slices"
)

// Rect is Ultralytics' rect order (its dataset's set_rectangle): ids
// sorted by their image's aspect ratio, height / width, ties kept in the
// order given (numpy's argsort there is not stable; here it is, so the
// order does not depend on the sort's implementation).
func Rect(ids []uint64, aspect func(id uint64) float64) []uint64 {
	out := slices.Clone(ids)
	slices.SortStableFunc(out, func(a, b uint64) int {
		x, y := aspect(a), aspect(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return out
}

// RectShapes is the (rows, cols) each batch of a rect order is letterboxed
// to, as Ultralytics computes it: consecutive batches of batch samples of
// the sorted aspects (height / width); a batch whose aspects are all below
// 1 is (max, 1) times imgsz, one whose aspects are all above 1 is (1,
// 1/min), any other square; each side ceil(side·imgsz/stride + pad)·stride.
func RectShapes(sorted []float64, batch, imgsz, stride int, pad float64) [][2]int {
	var out [][2]int
	for i := 0; i < len(sorted); i += batch {
		ar := sorted[i:min(i+batch, len(sorted))]
		lo, hi := slices.Min(ar), slices.Max(ar)
		s := [2]float64{1, 1}
		switch {
		case hi < 1:
			s = [2]float64{hi, 1}
		case lo > 1:
			s = [2]float64{1, 1 / lo}
		}
		var shape [2]int
		for k := range s {
			shape[k] = int(math.Ceil(s[k]*float64(imgsz)/float64(stride)+pad)) * stride
		}
		out = append(out, shape)
	}
	return out
}
