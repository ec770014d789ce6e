package order

import (
	"slices"
	"testing"
)

func TestRect(t *testing.T) {
	aspects := map[uint64]float64{0: 1.5, 1: 0.5, 2: 1.0, 3: 0.5, 4: 0.75, 5: 2.0}
	got := Rect([]uint64{0, 1, 2, 3, 4, 5}, func(id uint64) float64 { return aspects[id] })
	if want := []uint64{1, 3, 4, 2, 0, 5}; !slices.Equal(got, want) {
		t.Fatalf("Rect = %v, want %v (ties in the given order)", got, want)
	}
	got = Rect([]uint64{3, 1}, func(id uint64) float64 { return aspects[id] })
	if !slices.Equal(got, []uint64{3, 1}) {
		t.Fatalf("ties reordered: %v", got)
	}
}

// TestRectShapes: Ultralytics' batch shapes, worked by hand for imgsz 640,
// stride 32, pad 0.5 (its validation setting) and pad 0.
func TestRectShapes(t *testing.T) {
	for _, c := range []struct {
		sorted []float64
		batch  int
		pad    float64
		want   [][2]int
	}{
		// all wide: (0.75·640/32 + 0.5 = 15.5 -> 16)·32 = 512 rows
		{[]float64{0.5, 0.75}, 2, 0.5, [][2]int{{512, 672}}},
		{[]float64{0.5, 0.75}, 2, 0, [][2]int{{480, 640}}},
		// all tall: cols 640/1.25 = 512 -> (16 + 0.5 -> 17)·32 = 544
		{[]float64{1.25, 2}, 2, 0.5, [][2]int{{672, 544}}},
		// mixed: square; and a last, partial batch of its own
		{[]float64{0.5, 1.5, 2, 3, 4}, 2, 0, [][2]int{{640, 640}, {640, 320}, {640, 160}}},
		{[]float64{1}, 4, 0.5, [][2]int{{672, 672}}},
	} {
		if got := RectShapes(c.sorted, c.batch, 640, 32, c.pad); !slices.Equal(got, c.want) {
			t.Errorf("%v in batches of %d, pad %v: %v, want %v", c.sorted, c.batch, c.pad, got, c.want)
		}
	}
}
