// C side of package audioproc: several frames' power spectra at once.
#ifndef FFCV_AUDIOPROC_POWERV_H
#define FFCV_AUDIOPROC_POWERV_H

enum { FFA_MAX_STAGES = 32, FFA_MAX_LANES = 4 };


// The half-length transform's plan: its Stockham stages (radix 8, 4, 2,
// 3 or 5; the sub-transforms' length m after each; where each stage's
// twiddles start in tw, in doubles).
typedef struct {
	int h, stages;
	int radix[FFA_MAX_STAGES], m[FFA_MAX_STAGES], tw_at[FFA_MAX_STAGES];
} ffstft_plan;

// Transforms lanes frames at once (4 on x86-64 with AVX2 and FMA, else
// 2): lane l's frame is the
// windowed samples x[start[l] ...] (n_fft = 2h of them, times win), or
// where start[l] < 0 what the caller packed in (zr, zi) (h vectors of
// lanes doubles each: lane l is frame l, its even samples in zr and odd
// ones in zi); (tr, ti) are scratch, all four h + 1 vectors long. Writes
// frame l's |X[k]|², k in [0, h], to out[l·(h+1) + k]. tw holds the
// stages' twiddles, wk the split's W^k (k in [0, h]), both complex
// values interleaved.
void ffstft_power_lanes(int lanes, const ffstft_plan *pl, const double *tw, const double *wk, const float *x,
                     const long *start, const double *win, double *zr, double *zi, double *tr, double *ti,
                     double *out);

// ffstft_power_lanes' frames through a mel bank, frame l's band m to
// out[l·bands + m]: band m weighs len[m] bins from lo[m] on, its weights
// next in w (after the bands before it).
void ffstft_mel_lanes(int lanes, const ffstft_plan *pl, const double *tw, const double *wk, const float *x,
                   const long *start, const double *win, double *zr, double *zi, double *tr, double *ti,
                   int bands, const int *lo, const int *len, const double *w, double *out);
#endif
