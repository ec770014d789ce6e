package yolo

import (
	"math"
	"sort"
)

// Resample returns the closed polygon xy (x, y pairs) as exactly k points,
// so every instance's outline fits one fixed-shape row of a polygon field.
// With fewer than k vertices every vertex stays and the k − n new points go
// on the edges in proportion to their lengths, evenly spaced along each:
// the outline, and its box, are unchanged. With more, the k points are
// evenly spaced along the outline from the first vertex. (Ultralytics
// resamples every segment to 1000 points by vertex index instead, which
// crowds points onto short edges.)
func Resample(xy []float64, k int) []float64 {
	n := len(xy) / 2
	if n == k || n == 0 || k < 1 {
		return append([]float64(nil), xy...)
	}
	edge := make([]float64, n)
	total := 0.0
	for i := 0; i < n; i++ {
		j := (i + 1) % n
		edge[i] = math.Hypot(xy[2*j]-xy[2*i], xy[2*j+1]-xy[2*i+1])
		total += edge[i]
	}
	out := make([]float64, 0, 2*k)
	at := func(i int, t float64) {
		j := (i + 1) % n
		out = append(out, xy[2*i]+t*(xy[2*j]-xy[2*i]), xy[2*i+1]+t*(xy[2*j+1]-xy[2*i+1]))
	}
	if n > k {
		// k points evenly spaced by arc length.
		i, start := 0, 0.0 // edge i begins at arc length start
		for p := 0; p < k; p++ {
			s := total * float64(p) / float64(k)
			for i < n-1 && start+edge[i] <= s {
				start += edge[i]
				i++
			}
			t := 0.0
			if edge[i] > 0 {
				t = min((s-start)/edge[i], 1)
			}
			at(i, t)
		}
		return out
	}
	// Largest remainders: each edge's share of the k − n new points.
	extra, m := make([]int, n), k-n
	rem := make([]float64, n)
	given := 0
	for i := range edge {
		share := float64(m) / float64(n)
		if total > 0 {
			share = float64(m) * edge[i] / total
		}
		extra[i] = int(share)
		rem[i] = share - float64(extra[i])
		given += extra[i]
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return rem[idx[a]] > rem[idx[b]] })
	for _, i := range idx[:m-given] {
		extra[i]++
	}
	for i := 0; i < n; i++ {
		for q := 0; q <= extra[i]; q++ {
			at(i, float64(q)/float64(extra[i]+1))
		}
	}
	return out
}
