package rgb

import (
	"testing"
)

// Tiles lie where Ultralytics' _mosaic4 and _mosaic9 put them (positions
// worked out by hand from its rules for imgsz 10), and the sample alone
// where LetterBox centres it in the middle of the square.
func TestMosaicPlace(t *testing.T) {
	sizes := [][2]int{{10, 6}, {8, 10}, {10, 7}, {6, 10}, {10, 10}, {7, 9}, {10, 5}, {9, 8}, {4, 10}}
	for _, tc := range []struct {
		name   string
		n      int
		d      mosaicDraw
		sizes  [][2]int
		places [][2]int
	}{
		{"4 tiles", 4, mosaicDraw{on: true, xc: 12, yc: 8}, sizes[:4], [][2]int{{2, 2}, {12, -2}, {2, 8}, {12, 8}}},
		{"9 tiles", 9, mosaicDraw{on: true}, sizes,
			[][2]int{{5, 5}, {5, -5}, {13, -2}, {15, 5}, {15, 15}, {8, 11}, {-2, 11}, {-4, 3}, {1, -7}}},
		{"alone, wide", 4, mosaicDraw{}, sizes[:1], [][2]int{{5, 7}}},
		{"alone, tall", 9, mosaicDraw{}, [][2]int{{7, 10}}, [][2]int{{6, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := make([]tile, len(tc.sizes))
			for i, s := range tc.sizes {
				ts[i].w, ts[i].h = s[0], s[1]
			}
			(&mosaic{s: 10, n: tc.n}).place(tc.d, ts)
			for i, want := range tc.places {
				if got := [2]int{ts[i].x, ts[i].y}; got != want {
					t.Errorf("tile %d at %v, want %v", i, got, want)
				}
			}
		})
	}
}

// Tiles are resized as Ultralytics' load_image resizes: the longer side
// imgsz, the other ceil(side·imgsz/longer).
func TestMosaicFitSize(t *testing.T) {
	for _, tc := range []struct{ s, w0, h0, w, h int }{
		{640, 1000, 667, 640, 427},
		{640, 300, 200, 640, 427},
		{640, 480, 640, 480, 640},
		{640, 333, 1000, 214, 640},
		{10, 1, 1, 10, 10},
	} {
		if w, h := fitSize(tc.s, tc.w0, tc.h0); w != tc.w || h != tc.h {
			t.Errorf("fitSize(%d, %d, %d) = %d, %d, want %d, %d", tc.s, tc.w0, tc.h0, w, h, tc.w, tc.h)
		}
	}
}
