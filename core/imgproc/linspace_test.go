package imgproc

import "testing"

// Linspace32 gives torch.linspace's float32 elements (torch 2.7's values),
// among them those that stepping up from start all the way rounds
// differently: the second half steps down from end.
func TestLinspace32(t *testing.T) {
	for _, tc := range []struct {
		start, end float64
		steps, i   int
		want       float32
	}{
		{0, 0.99, 31, 0, 0},
		{0, 0.99, 31, 1, 0.033},
		{0, 0.99, 31, 20, 0.66}, // stepped up from 0: 0.65999997
		{0, 0.99, 31, 30, 0.99},
		{0, 0.3, 31, 16, 0.16},   // stepped up from 0: 0.16000001
		{0, 0.99, 100, 54, 0.54}, // stepped up from 0: 0.53999996
		{0, 0.9, 31, 9, 0.26999998},
		{0, 135, 31, 29, 130.5},
		{1, 0, 5, 1, 0.75},
		{1, 0, 5, 4, 0},
		{0.3, 0.3, 1, 0, 0.3},
	} {
		if got := Linspace32(tc.start, tc.end, tc.steps, tc.i); float32(got) != tc.want || got != float64(float32(got)) {
			t.Errorf("Linspace32(%v, %v, %d, %d) = %v, want %v", tc.start, tc.end, tc.steps, tc.i, got, tc.want)
		}
	}
}
