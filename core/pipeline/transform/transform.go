// Package transform registers FFCV 1.0's transforms, with its semantics:
// on uint8 (H, W, C) images flip_h and flip_v, translate, cutout,
// brightness, contrast and saturation, grayscale, solarize, random_crop and
// normalize (to float32 or float16), and YOLO's random_hsv; on labels replace_label; poison; and
// on whole batches image_mixup and label_mixup. Random decisions come from
// Ctx.Rand(key), so they depend only on (seed, epoch, position, key).
package transform

import (
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

func init() {
	pipeline.Register("flip_h", newFlip(true))
	pipeline.Register("flip_v", newFlip(false))
	pipeline.Register("translate", newTranslate)
	pipeline.Register("cutout", newCutout)
	pipeline.Register("brightness", newBlend("brightness"))
	pipeline.Register("contrast", newBlend("contrast"))
	pipeline.Register("saturation", newBlend("saturation"))
	pipeline.Register("grayscale", newGrayscale)
	pipeline.Register("solarize", newSolarize)
	pipeline.Register("random_crop", newRandomCrop)
	pipeline.Register("normalize", newNormalize)
	pipeline.Register("replace_label", newReplaceLabel)
	pipeline.Register("poison", newPoison)
	pipeline.Register("random_hsv", newRandomHSV)
	pipeline.RegisterBatch("image_mixup", newMixup(false))
	pipeline.RegisterBatch("label_mixup", newMixup(true))
}

// clipU8 is numpy's clip to [0, 255] and astype(uint8), which truncates.
func clipU8(v float64) byte {
	if v <= 0 {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return byte(v)
}

// b2f is a reported flag: 1 for true, 0 for false.
func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}
