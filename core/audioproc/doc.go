// Package audioproc implements the numeric kernels of the audio
// operations on float32 waveforms, as core/imgproc does for images: a
// mixed-radix FFT, the spectrogram of torch.stft, mel filter banks
// (torchaudio's melscale_fbanks, librosa's filters.mel), Whisper's
// log-mel and torchaudio's sinc resampling. The arithmetic runs in
// float64 except where torch's float32 rounding decides the result (the
// resampling kernel), which is then followed step by step; the tests hold
// each kernel against a naive reference and against values torchaudio,
// librosa and Whisper computed.
//
// The spectrogram's transform, its hot loop, also has a C version
// (powerv.c) that runs the same Stockham passes on two frames at once in
// SIMD vectors (GCC's and Clang's vector extensions: SSE2 on x86-64,
// NEON on arm64), for plans of radix 8, 4, 2, 3 and 5; a build without
// cgo, or another radix, takes the Go transform, frame by frame. The two
// agree to float64 rounding.
package audioproc
