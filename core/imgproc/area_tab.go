package imgproc

import "math"

// taps is a separable box-filter table for one axis: destination index i
// reads the contiguous source span first[i], first[i]+1, ... with the
// weights w[off[i]:off[i+1]].
type taps struct {
	first []int32
	off   []int32
	w     []float32
}

func (t *taps) reset(n int) {
	t.first = t.first[:0]
	t.off = append(t.off[:0], 0)
	t.w = t.w[:0]
	if cap(t.first) < n {
		t.first = make([]int32, 0, n)
	}
}

// add appends weight w for source index s to the destination index being
// built; indexes arrive in ascending order.
func (t *taps) add(d, s int, w float32) {
	if len(t.first) == d {
		t.first = append(t.first, int32(s))
	}
	t.w = append(t.w, w)
}

// end closes the destination index being built.
func (t *taps) end() { t.off = append(t.off, int32(len(t.w))) }

// areaTaps builds the table exactly like OpenCV's computeResizeAreaTab
// (double precision, the 1e-3 thresholds and the cellWidth clamp included),
// so that the float sums match OpenCV's bit for bit. It needs scale >= 1.
func (t *taps) areaTaps(ssize, dsize int, scale float64) {
	t.reset(dsize)
	for dx := 0; dx < dsize; dx++ {
		fsx1 := float64(float64(dx) * scale)
		fsx2 := fsx1 + scale
		cellWidth := math.Min(scale, float64(ssize)-fsx1)
		sx1, sx2 := int(math.Ceil(fsx1)), int(math.Floor(fsx2))
		sx2 = min(sx2, ssize-1)
		sx1 = min(sx1, sx2)
		if float64(sx1)-fsx1 > 1e-3 {
			t.add(dx, sx1-1, float32((float64(sx1)-fsx1)/cellWidth))
		}
		for sx := sx1; sx < sx2; sx++ {
			t.add(dx, sx, float32(1/cellWidth))
		}
		if fsx2-float64(sx2) > 1e-3 {
			t.add(dx, sx2, float32(math.Min(math.Min(fsx2-float64(sx2), 1), cellWidth)/cellWidth))
		}
		t.end()
	}
}

// regionTaps splits the source interval [lo, hi) into dsize equal cells and
// weights every source pixel k (covering [k, k+1)) by its overlap with the
// cell, divided by the cell width: an exact box filter at any ratio.
func (t *taps) regionTaps(ssize, dsize int, lo, hi float64) {
	t.reset(dsize)
	scale := (hi - lo) / float64(dsize)
	for d := 0; d < dsize; d++ {
		a := lo + float64(float64(d)*scale)
		b := a + scale
		if d == dsize-1 {
			b = hi // no drift at the far edge
		}
		k0 := max(int(math.Floor(a)), 0)
		k1 := min(int(math.Ceil(b)), ssize)
		for k := k0; k < k1; k++ {
			ov := math.Min(b, float64(k+1)) - math.Max(a, float64(k))
			if ov <= 1e-9 {
				continue // zero overlap at an exact boundary
			}
			t.add(d, k, float32(ov/(b-a)))
		}
		if len(t.first) == d { // degenerate cell: keep the table well formed
			t.add(d, min(max(k0, 0), ssize-1), 1)
		}
		t.end()
	}
}

// fixedTaps is taps padded with zero weights to the same count n for every
// destination index. A constant trip count keeps the horizontal loop free of
// mispredicted branches; adding 0*x to a non-negative sum changes nothing,
// so results stay bit-identical.
type fixedTaps struct {
	n     int
	first []int32   // first source index per destination index
	w     []float32 // n weights per destination index
}

func (f *fixedTaps) from(t *taps, ssize int) {
	dsize := len(t.first)
	f.n = 1
	for d := 0; d < dsize; d++ {
		f.n = max(f.n, int(t.off[d+1]-t.off[d]))
	}
	f.n = min(f.n, ssize)
	if cap(f.first) < dsize {
		f.first = make([]int32, dsize)
	}
	f.first = f.first[:dsize]
	f.w = growF32(f.w, dsize*f.n)
	clear(f.w)
	for d := 0; d < dsize; d++ {
		ws := t.w[t.off[d]:t.off[d+1]]
		first := int(t.first[d])
		shift := max(first+f.n-ssize, 0) // keep the padded span inside the row
		f.first[d] = int32(first - shift)
		copy(f.w[d*f.n+shift:], ws)
	}
}

// mirror reverses the order of the destination indexes, so that filtering
// with the table writes each row mirrored.
func (f *fixedTaps) mirror() {
	n, d := f.n, len(f.first)
	for i, j := 0, d-1; i < j; i, j = i+1, j-1 {
		f.first[i], f.first[j] = f.first[j], f.first[i]
		for k := 0; k < n; k++ {
			f.w[i*n+k], f.w[j*n+k] = f.w[j*n+k], f.w[i*n+k]
		}
	}
}
