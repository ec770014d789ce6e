// C side of package audioproc: several frames' power spectra at once.
#ifndef FFCV_AUDIOPROC_POWERV_H
#define FFCV_AUDIOPROC_POWERV_H

enum { FFA_MAX_STAGES = 32, FFA_LANES = 2 };

// The half-length transform's plan: its Stockham stages (radix 8, 4, 2,
// 3 or 5; the sub-transforms' length m after each; where each stage's
// twiddles start in tw, in doubles).
typedef struct {
	int h, stages;
	int radix[FFA_MAX_STAGES], m[FFA_MAX_STAGES], tw_at[FFA_MAX_STAGES];
} ffa_plan;

// Transforms FFA_LANES frames at once: lane l's frame is the windowed
// samples x[start[l] ...] (n_fft = 2h of them, times win), or where
// start[l] < 0 what the caller packed in (zr, zi) (h vectors of
// FFA_LANES lanes each: lane l is frame l, its even samples in zr and
// odd ones in zi); (tr, ti) are scratch. All four hold h + 1 vectors. Writes frame l's |X[k]|², k in
// [0, h], to out[l·(h+1) + k]. tw holds the stages' twiddles, wk the
// split's W^k (k in [0, h]), both complex values interleaved.
void ffa_power_lanes(const ffa_plan *pl, const double *tw, const double *wk, const float *x, const long *start,
                     const double *win, double *zr, double *zi, double *tr, double *ti, double *out);

// ffa_power_lanes' frames through a mel bank, frame l's band m to
// out[l·bands + m]: band m weighs len[m] bins from lo[m] on, its weights
// next in w (after the bands before it).
void ffa_mel_lanes(const ffa_plan *pl, const double *tw, const double *wk, const float *x, const long *start,
                   const double *win, double *zr, double *zi, double *tr, double *ti, int bands, const int *lo,
                   const int *len, const double *w, double *out);
#endif
