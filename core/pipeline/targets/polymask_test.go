package targets

import "testing"

// Pixels whose centres lie inside the polygon, even-odd.
func TestRasterize(t *testing.T) {
	for _, tc := range []struct {
		name string
		xy   []float64
		want []string
	}{
		{"square on pixel edges", []float64{1, 1, 3, 1, 3, 3, 1, 3}, []string{
			".....",
			".##..",
			".##..",
			".....",
		}},
		{"triangle", []float64{0, 0, 5, 0, 0, 4}, []string{
			"####.",
			"###..",
			"##...",
			"#....",
		}},
		{"clipped to the map", []float64{-2, -2, 9, -2, 9, 1.4, -2, 1.4}, []string{
			"#####",
			".....",
			".....",
			".....",
		}},
		{"too few points", []float64{0, 0, 5, 5}, []string{".....", ".....", ".....", "....."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans, _ := rasterize(nil, nil, tc.xy, 5, 4)
			got := make([][]byte, 4)
			for y := range got {
				got[y] = []byte(".....")
			}
			for _, s := range spans {
				for x := s.x0; x < s.x1; x++ {
					got[s.y][x] = '#'
				}
			}
			for y := range got {
				if string(got[y]) != tc.want[y] {
					t.Fatalf("row %d %q, want %q (all: %q)", y, got[y], tc.want[y], got)
				}
			}
		})
	}
}
