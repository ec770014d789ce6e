// Package ops registers every built-in operation: it imports each op
// family for its init, as a program imports image/png for its decoder.
// Whatever builds programs from user specs (export, and the tests of
// core/loader) imports it:
//
//	import _ "github.com/ffcv-go/ffcv-go/core/pipeline/ops"
package ops

import (
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/audio"     // waveforms and spectrograms: resampling, mel, Whisper, SpecAugment
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/basic"     // int, float, ndarray, bytes
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/clip"      // VideoField's clip decoders
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/policy"    // RandAugment, TrivialAugmentWide, AutoAugment, AugMix
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/rgb"       // RGBImageField's decoders and crops
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/ssl"       // FFCV-SSL's jitter, blur, rotation, erasing
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/targets"   // ragged and mask targets
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/text"      // TextField's tokens and captions
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/transform" // FFCV 1.0's transforms and mixup
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/waveform"  // AudioField's decoders
)
