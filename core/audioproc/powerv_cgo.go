//go:build cgo

package audioproc

// #cgo CFLAGS: -O2 -fvisibility=hidden
// #include "powerv.h"
import "C"

import (
	"os"
	"runtime"

	"golang.org/x/sys/cpu"
)

// maxLanes bounds lanes, the frames powerv.c transforms at once on
// this CPU: 4 on x86-64 with AVX2 and FMA, else 2; 1 (the Go transform,
// frame by frame) with FFCV_GO_SIMD=off, and 2 on x86-64 with
// FFCV_GO_SIMD=sse2, as core/imgproc's kernels take that switch. A
// variable, so that the tests run every width.
const maxLanes = C.FFA_MAX_LANES

var lanes = func() int {
	switch mode := os.Getenv("FFCV_GO_SIMD"); {
	case mode == "off":
		return 1
	case runtime.GOARCH == "amd64" && cpu.X86.HasAVX2 && cpu.X86.HasFMA && mode != "sse2":
		return 4
	}
	return 2
}()

// planV is an RFFT's plan for powerv.c: several frames' power spectra
// at once, in SIMD vectors (SSE2 on x86-64, NEON on arm64).
type planV struct {
	c      C.ffstft_plan
	tw, wk []float64
}

// newPlanV is r's plan for powerv.c, or nil where it has none: an odd
// length, or a radix other than 8, 4, 2, 3 and 5.
func newPlanV(r *RFFT) *planV {
	if r.half == nil || len(r.half.stages) > C.FFA_MAX_STAGES {
		return nil
	}
	p := &planV{}
	p.c.h, p.c.stages = C.int(r.n/2), C.int(len(r.half.stages))
	for i, st := range r.half.stages {
		switch st.r {
		case 8, 4, 2, 3, 5:
		default:
			return nil
		}
		p.c.radix[i], p.c.m[i], p.c.tw_at[i] = C.int(st.r), C.int(st.m), C.int(len(p.tw))
		for _, w := range st.tw {
			p.tw = append(p.tw, real(w), imag(w))
		}
	}
	p.tw = append(p.tw, 0, 0) // never empty
	for _, w := range r.w {
		p.wk = append(p.wk, real(w), imag(w))
	}
	return p
}

// power transforms lanes frames: lane l's is x[start[l]:], windowed by
// win, or for start[l] < 0 what zr and zi hold for it (lane l of vector
// k at lanes·k + l); tr and ti are scratch, all four lanes·(h+1) long.
// It writes frame l's |X[k]|² to out[l·(h+1) + k].
func (p *planV) power(x []float32, start *[maxLanes]int, win, zr, zi, tr, ti, out []float64) {
	xp, st := p.check(x, start, win, zr, zi, tr, ti)
	_ = out[lanes*(int(p.c.h)+1)-1]
	C.ffstft_power_lanes(C.int(lanes), &p.c, (*C.double)(&p.tw[0]), (*C.double)(&p.wk[0]), xp, &st[0], (*C.double)(&win[0]),
		(*C.double)(&zr[0]), (*C.double)(&zi[0]), (*C.double)(&tr[0]), (*C.double)(&ti[0]), (*C.double)(&out[0]))
}

// mel is power through the bank b, frame l's band m to out[l·bands + m].
func (p *planV) mel(x []float32, start *[maxLanes]int, win, zr, zi, tr, ti []float64, b *MelBank, out []float64) {
	xp, st := p.check(x, start, win, zr, zi, tr, ti)
	nm := len(b.Filters)
	_ = out[lanes*nm-1]
	C.ffstft_mel_lanes(C.int(lanes), &p.c, (*C.double)(&p.tw[0]), (*C.double)(&p.wk[0]), xp, &st[0], (*C.double)(&win[0]),
		(*C.double)(&zr[0]), (*C.double)(&zi[0]), (*C.double)(&tr[0]), (*C.double)(&ti[0]), C.int(nm),
		(*C.int)(&b.flat.lo[0]), (*C.int)(&b.flat.n[0]), (*C.double)(&b.flat.w[0]), (*C.double)(&out[0]))
}

// check bounds what the C side reads and writes, and gives it x and the
// starts.
func (p *planV) check(x []float32, start *[maxLanes]int, win, zr, zi, tr, ti []float64) (*C.float, [maxLanes]C.long) {
	h := int(p.c.h)
	n := lanes * (h + 1)
	_, _, _, _, _ = zr[n-1], zi[n-1], tr[n-1], ti[n-1], win[2*h-1]
	var st [maxLanes]C.long
	var xp *C.float
	for l, at := range start[:lanes] {
		st[l] = -1
		if at >= 0 {
			_ = x[at+2*h-1]
			st[l], xp = C.long(at), (*C.float)(&x[0])
		}
	}
	return xp, st
}
