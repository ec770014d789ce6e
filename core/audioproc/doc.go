// Package audioproc implements the numeric kernels of the audio
// operations on float32 waveforms, as core/imgproc does for images: a
// mixed-radix FFT, the spectrogram of torch.stft, mel filter banks
// (torchaudio's melscale_fbanks, librosa's filters.mel), Whisper's
// log-mel and torchaudio's sinc resampling. The arithmetic runs in
// float64 except where torch's float32 rounding decides the result (the
// resampling kernel), which is then followed step by step; the tests hold
// each kernel against a naive reference and against values torchaudio,
// librosa and Whisper computed.
package audioproc
