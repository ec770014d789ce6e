// The kernels of powerv.c for one vector width, included once per width
// with VL (the lanes) and TARGET (the functions' target attribute)
// defined, and vd, twiddle, stage, power_vec, power_out and mel_out
// defined to that width's names.

// VL doubles, aligned as a double (Go's []float64 is 8-byte aligned).
typedef double vd __attribute__((vector_size(sizeof(double) * VL), aligned(8)));

// y = y·w, w = w[0] + i·w[1].
static inline TARGET void twiddle(vd *yr, vd *yi, const double *w) {
	vd r = *yr * w[0] - *yi * w[1];
	*yi = *yr * w[1] + *yi * w[0];
	*yr = r;
}

// One Stockham step of radix r (fft.go's stage.run): sub-sequences of
// length r·m at stride s go from (xr, xi) to (yr, yi), each butterfly's
// outputs but the first twiddled by tw (m·(r−1) complex values,
// interleaved) unless p = 0.
static TARGET void stage(int r, int m, int s, const double *tw, const vd *xr, const vd *xi, vd *yr, vd *yi) {
	int ms = m * s;
	switch (r) {
	case 8:
		LOOP({
			vd a0r = xr[i], a1r = xr[i + ms], a2r = xr[i + 2 * ms], a3r = xr[i + 3 * ms];
			vd a4r = xr[i + 4 * ms], a5r = xr[i + 5 * ms], a6r = xr[i + 6 * ms], a7r = xr[i + 7 * ms];
			vd a0i = xi[i], a1i = xi[i + ms], a2i = xi[i + 2 * ms], a3i = xi[i + 3 * ms];
			vd a4i = xi[i + 4 * ms], a5i = xi[i + 5 * ms], a6i = xi[i + 6 * ms], a7i = xi[i + 7 * ms];
			vd b0r = a0r + a4r, b1r = a1r + a5r, b2r = a2r + a6r, b3r = a3r + a7r;
			vd b0i = a0i + a4i, b1i = a1i + a5i, b2i = a2i + a6i, b3i = a3i + a7i;
			vd c0r = a0r - a4r, c1r = a1r - a5r, c2r = a2r - a6r, c3r = a3r - a7r;
			vd c0i = a0i - a4i, c1i = a1i - a5i, c2i = a2i - a6i, c3i = a3i - a7i;
			vd t;
			t = (c1r + c1i) * sqrt_half, c1i = (c1i - c1r) * sqrt_half, c1r = t; // ·(1−i)/√2
			t = c2i, c2i = -c2r, c2r = t;                                        // ·(−i)
			t = (c3i - c3r) * sqrt_half, c3i = -(c3r + c3i) * sqrt_half, c3r = t; // ·(−1−i)/√2
			vd t0r = b0r + b2r, t1r = b0r - b2r, t2r = b1r + b3r, t3r = b1r - b3r;
			vd t0i = b0i + b2i, t1i = b0i - b2i, t2i = b1i + b3i, t3i = b1i - b3i;
			t = t3i, t3i = -t3r, t3r = t;
			vd u0r = c0r + c2r, u1r = c0r - c2r, u2r = c1r + c3r, u3r = c1r - c3r;
			vd u0i = c0i + c2i, u1i = c0i - c2i, u2i = c1i + c3i, u3i = c1i - c3i;
			t = u3i, u3i = -u3r, u3r = t;
			vd y0r = t0r + t2r, y2r = t1r + t3r, y4r = t0r - t2r, y6r = t1r - t3r;
			vd y0i = t0i + t2i, y2i = t1i + t3i, y4i = t0i - t2i, y6i = t1i - t3i;
			vd y1r = u0r + u2r, y3r = u1r + u3r, y5r = u0r - u2r, y7r = u1r - u3r;
			vd y1i = u0i + u2i, y3i = u1i + u3i, y5i = u0i - u2i, y7i = u1i - u3i;
			if (p > 0) {
				twiddle(&y1r, &y1i, w); twiddle(&y2r, &y2i, w + 2); twiddle(&y3r, &y3i, w + 4);
				twiddle(&y4r, &y4i, w + 6); twiddle(&y5r, &y5i, w + 8); twiddle(&y6r, &y6i, w + 10);
				twiddle(&y7r, &y7i, w + 12);
			}
			yr[o] = y0r, yr[o + s] = y1r, yr[o + 2 * s] = y2r, yr[o + 3 * s] = y3r;
			yr[o + 4 * s] = y4r, yr[o + 5 * s] = y5r, yr[o + 6 * s] = y6r, yr[o + 7 * s] = y7r;
			yi[o] = y0i, yi[o + s] = y1i, yi[o + 2 * s] = y2i, yi[o + 3 * s] = y3i;
			yi[o + 4 * s] = y4i, yi[o + 5 * s] = y5i, yi[o + 6 * s] = y6i, yi[o + 7 * s] = y7i;
		})
		break;
	case 4:
		LOOP({
			vd a0r = xr[i], a1r = xr[i + ms], a2r = xr[i + 2 * ms], a3r = xr[i + 3 * ms];
			vd a0i = xi[i], a1i = xi[i + ms], a2i = xi[i + 2 * ms], a3i = xi[i + 3 * ms];
			vd t0r = a0r + a2r, t1r = a0r - a2r, t2r = a1r + a3r, t3r = a1r - a3r;
			vd t0i = a0i + a2i, t1i = a0i - a2i, t2i = a1i + a3i, t3i = a1i - a3i;
			vd t = t3i;
			t3i = -t3r, t3r = t; // −i·t3
			vd y0r = t0r + t2r, y1r = t1r + t3r, y2r = t0r - t2r, y3r = t1r - t3r;
			vd y0i = t0i + t2i, y1i = t1i + t3i, y2i = t0i - t2i, y3i = t1i - t3i;
			if (p > 0) {
				twiddle(&y1r, &y1i, w); twiddle(&y2r, &y2i, w + 2); twiddle(&y3r, &y3i, w + 4);
			}
			yr[o] = y0r, yr[o + s] = y1r, yr[o + 2 * s] = y2r, yr[o + 3 * s] = y3r;
			yi[o] = y0i, yi[o + s] = y1i, yi[o + 2 * s] = y2i, yi[o + 3 * s] = y3i;
		})
		break;
	case 2:
		LOOP({
			vd ar = xr[i], ai = xi[i], br = xr[i + ms], bi = xi[i + ms];
			vd dr = ar - br, di = ai - bi;
			if (p > 0)
			twiddle(&dr, &di, w);
			yr[o] = ar + br, yi[o] = ai + bi, yr[o + s] = dr, yi[o + s] = di;
		})
		break;
	case 3:
		LOOP({
			vd a0r = xr[i], a1r = xr[i + ms], a2r = xr[i + 2 * ms];
			vd a0i = xi[i], a1i = xi[i + ms], a2i = xi[i + 2 * ms];
			vd sr = a1r + a2r, si = a1i + a2i, dr = a1r - a2r, di = a1i - a2i;
			vd ur = a0r - 0.5 * sr, ui = a0i - 0.5 * si;
			vd vr = -sin3 * di, vi = sin3 * dr; // i·sin3·dif
			vd y0r = a0r + sr, y1r = ur + vr, y2r = ur - vr;
			vd y0i = a0i + si, y1i = ui + vi, y2i = ui - vi;
			if (p > 0) {
				twiddle(&y1r, &y1i, w); twiddle(&y2r, &y2i, w + 2);
			}
			yr[o] = y0r, yr[o + s] = y1r, yr[o + 2 * s] = y2r;
			yi[o] = y0i, yi[o + s] = y1i, yi[o + 2 * s] = y2i;
		})
		break;
	default: // 5
		LOOP({
			vd a0r = xr[i], a1r = xr[i + ms], a2r = xr[i + 2 * ms], a3r = xr[i + 3 * ms], a4r = xr[i + 4 * ms];
			vd a0i = xi[i], a1i = xi[i + ms], a2i = xi[i + 2 * ms], a3i = xi[i + 3 * ms], a4i = xi[i + 4 * ms];
			vd b1r = a1r + a4r, b4r = a1r - a4r, b2r = a2r + a3r, b3r = a2r - a3r;
			vd b1i = a1i + a4i, b4i = a1i - a4i, b2i = a2i + a3i, b3i = a2i - a3i;
			vd u1r = a0r + (cos51 * b1r + cos52 * b2r), u1i = a0i + (cos51 * b1i + cos52 * b2i);
			vd u2r = a0r + (cos52 * b1r + cos51 * b2r), u2i = a0i + (cos52 * b1i + cos51 * b2i);
			vd v1r = sin51 * b4r + sin52 * b3r, v1i = sin51 * b4i + sin52 * b3i;
			vd v2r = sin52 * b4r - sin51 * b3r, v2i = sin52 * b4i - sin51 * b3i;
			// i·v: (−im, re)
			vd y0r = a0r + b1r + b2r, y1r = u1r - v1i, y2r = u2r - v2i, y3r = u2r + v2i, y4r = u1r + v1i;
			vd y0i = a0i + b1i + b2i, y1i = u1i + v1r, y2i = u2i + v2r, y3i = u2i - v2r, y4i = u1i - v1r;
			if (p > 0) {
				twiddle(&y1r, &y1i, w); twiddle(&y2r, &y2i, w + 2); twiddle(&y3r, &y3i, w + 4);
				twiddle(&y4r, &y4i, w + 6);
			}
			yr[o] = y0r, yr[o + s] = y1r, yr[o + 2 * s] = y2r, yr[o + 3 * s] = y3r, yr[o + 4 * s] = y4r;
			yi[o] = y0i, yi[o + s] = y1i, yi[o + 2 * s] = y2i, yi[o + 3 * s] = y3i, yi[o + 4 * s] = y4i;
		})
	}
}

// The power spectra of the lanes' frames, |X[k]|² for k in [0, h] as
// h + 1 vectors, in whichever of the buffer pairs does not hold the
// transform (each h + 1 vectors long).
static TARGET vd *power_vec(const ffstft_plan *pl, const double *tw, const double *wk, const float *x, const long *start,
                     const double *win, double *zr, double *zi, double *tr, double *ti) {
	int h = pl->h, s = 1;
	// The windowed samples of the lanes whose frame lies inside x.
	for (int l = 0; l < VL; l++) {
		if (start[l] < 0) continue;
		const float *f = x + start[l];
		for (int k = 0; k < h; k++) {
			zr[VL * k + l] = (double)f[2 * k] * win[2 * k];
			zi[VL * k + l] = (double)f[2 * k + 1] * win[2 * k + 1];
		}
	}
	vd *ar = (vd *)zr, *ai = (vd *)zi, *br = (vd *)tr, *bi = (vd *)ti;
	for (int k = 0; k < pl->stages; k++) {
		int r = pl->radix[k];
		stage(r, pl->m[k], s, tw + pl->tw_at[k], ar, ai, br, bi);
		vd *t = ar;
		ar = br, br = t;
		t = ai, ai = bi, bi = t;
		s *= r;
	}
	// RFFT.Power's split: E and O doubled, |X|² a quarter of |E ± W·O|².
	vd *P = br;
	vd p0 = ar[0] + ai[0], ph = ar[0] - ai[0];
	P[0] = p0 * p0, P[h] = ph * ph;
	for (int k = 1; k <= h / 2; k++) {
		vd er = ar[k] + ar[h - k], ei = ai[k] - ai[h - k];
		vd or = ai[k] + ai[h - k], oi = ar[h - k] - ar[k];
		double wr = wk[2 * k], wi = wk[2 * k + 1];
		vd tr_ = wr * or - wi * oi, ti_ = wr * oi + wi * or;
		vd pr = er + tr_, pi = ei + ti_, mr = er - tr_, mi = ei - ti_;
		P[k] = (pr * pr + pi * pi) * 0.25, P[h - k] = (mr * mr + mi * mi) * 0.25;
	}
	return P;
}

static TARGET void power_out(const ffstft_plan *pl, const double *tw, const double *wk, const float *x, const long *start,
                     const double *win, double *zr, double *zi, double *tr, double *ti, double *out) {
	int h = pl->h;
	vd *P = power_vec(pl, tw, wk, x, start, win, zr, zi, tr, ti);
	for (int k = 0; k <= h; k++)
		for (int l = 0; l < VL; l++) out[l * (h + 1) + k] = P[k][l];
}

static TARGET void mel_out(const ffstft_plan *pl, const double *tw, const double *wk, const float *x, const long *start,
                   const double *win, double *zr, double *zi, double *tr, double *ti, int bands, const int *lo,
                   const int *len, const double *w, double *out) {
	vd *P = power_vec(pl, tw, wk, x, start, win, zr, zi, tr, ti);
	// MelBank.Apply's sums, in its order.
	for (int m = 0; m < bands; m++) {
		vd acc = {0};
		const vd *p = P + lo[m];
		for (int j = 0; j < len[m]; j++) acc += w[j] * p[j];
		w += len[m];
		for (int l = 0; l < VL; l++) out[l * bands + m] = acc[l];
	}
}
