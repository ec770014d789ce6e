package imgproc

import (
	"math"
	"sync"
)

// smoothed[s] is round(s/13) for s = S + 4c up to 13·255: a load is
// cheaper than the division.
var smoothed = func() (t [4096]uint8) {
	for s := range 13*255 + 1 {
		t[s] = uint8((2*s + 13) / 26)
	}
	return t
}()

// sharpenCarry marks a blend step taking torch's float steps.
const sharpenCarry = math.MinInt32

// Sharpen is torchvision's adjust_sharpness (the policies' Sharpness):
// the image blended by f with its 3×3 smoothed version (1/13 around, 5/13
// in the middle, rounded), the border rows and columns kept, in integer
// arithmetic, byte for byte. The smoothed value is round((S + 4c)/13) for
// S the 3×3 sum and c the centre: the exact quotient is never within 1/26
// of a rounding tie, far beyond the float32 sum's error, so torch's float
// kernel rounds to the same integer. The blend trunc(float32(x + d·alpha)),
// d = blur - x, is x + floor(d·alpha) (x + d·alpha is exact in float64)
// unless the fraction lies within float32's rounding of 1, where the float32
// rounding may carry: those d take torch's float steps. Per factor, that
// makes a table by smoothed value and centre.
//
// scratch has img's size. tab is f's table (NewSharpenTable), for callers
// whose factors recur; nil fills one from a pool.
func Sharpen(img, scratch []byte, h, w, ch int, f float64, tab *SharpenTable) {
	if h <= 2 || w <= 2 {
		return
	}
	if tab == nil {
		tab = sharpTabs.Get().(*SharpenTable)
		defer sharpTabs.Put(tab)
		sharpFill(tab, f)
	}
	copy(scratch, img)
	stride := w * ch
	n := stride - 2*ch // a row's interior
	// Column sums of three rows, then each 3×3 sum is three of them; a
	// chunk of the row at a time, in a buffer on the stack.
	var colBuf [4096]uint16
	chunk := len(colBuf) - 2*ch
	for y := 1; y < h-1; y++ {
		up := scratch[(y-1)*stride : y*stride]
		mid := scratch[y*stride : (y+1)*stride]
		dn := scratch[(y+1)*stride : (y+2)*stride]
		row := img[y*stride : (y+1)*stride]
		for a := 0; a < n; a += chunk {
			m := min(chunk, n-a)
			cols := colBuf[:m+2*ch]
			colSums(cols, up[a:], mid[a:], dn[a:])
			sharpenRun(row[a+ch:a+ch+m], mid[a+ch:a+ch+m], cols[:m], cols[ch:ch+m], cols[2*ch:2*ch+m], tab)
		}
	}
}

// colSums sets cols to the sums of u, c and d.
//
// Out of line, in a small frame: inlined in Sharpen, the compiler keeps
// the loop counter on the stack, a store and load per value.
//
//go:noinline
func colSums(cols []uint16, u, c, d []byte) {
	u, c, d = u[:len(cols)], c[:len(cols)], d[:len(cols)]
	for i := range cols {
		cols[i] = uint16(u[i]) + uint16(c[i]) + uint16(d[i])
	}
}

// sharpenRun sharpens a run of a row: outs from the centres mids and the
// column sums to their left, at them and to their right. Windows of one
// length let the compiler drop the bounds checks; out of line as colSums.
//
//go:noinline
func sharpenRun(outs, mids []byte, left, centre, right []uint16, tab *SharpenTable) {
	mids, left, centre, right = mids[:len(outs)], left[:len(outs)], centre[:len(outs)], right[:len(outs)]
	sm := &smoothed // in a register, not reloaded per value
	for i := range outs {
		c := mids[i]
		s := uint32(left[i]) + uint32(centre[i]) + uint32(right[i]) + 4*uint32(c)
		outs[i] = tab[sm[s&4095]][c]
	}
}

// sharpFill fills tab[blur][c] with Sharpen's output for the smoothed value
// blur and the centre c.
func sharpFill(tab *SharpenTable, f float64) {
	alpha := float32(1 - f)
	for d := -255; d <= 255; d++ {
		st := sharpenStep(d, alpha)
		for c := max(0, -d); c < 256 && c+d < 256; c++ {
			v := byte(min(max(int64(c)+int64(st), 0), 255))
			if st == sharpenCarry {
				x := float32(c)
				v = TruncU8(fma32(float32(c+d)-x, alpha, x))
			}
			tab[c+d][c] = v
		}
	}
}

// SharpenTable is Sharpen's output for one factor, by smoothed value and
// centre.
type SharpenTable [256][256]byte

// NewSharpenTable returns factor f's table. Filling one costs about a
// third of sharpening a 224×224 image.
func NewSharpenTable(f float64) *SharpenTable {
	tab := new(SharpenTable)
	sharpFill(tab, f)
	return tab
}

// sharpTabs recycles the tables of callers that keep none.
var sharpTabs = sync.Pool{New: func() any { return new(SharpenTable) }}

// sharpenStep is floor(d·alpha) as the blend adds it to the centre, or
// sharpenCarry where the float32 rounding may carry.
func sharpenStep(d int, alpha float32) int32 {
	e := float64(d) * float64(alpha)
	fl := math.Floor(e)
	// Below 256 a float32's half ulp is 2^-17 at most; beyond, both clamp.
	if e-fl > 1-0x1p-12 {
		return sharpenCarry
	}
	return int32(max(min(fl, 1024), -1024))
}
