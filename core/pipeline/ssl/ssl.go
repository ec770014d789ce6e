// Package ssl registers FFCV-SSL's augmentations with torchvision's
// semantics: color_jitter (ColorJitter), gaussian_blur, rotate and
// random_erasing. Each reports what it drew for the sample (see
// pipeline.Reporter), which FFCV-SSL's Label* ops read through the generic
// label op; the pixel work is core/imgproc's.
package ssl

import (
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

func init() {
	pipeline.Register("color_jitter", newColorJitter)
	pipeline.Register("gaussian_blur", newGaussianBlur)
	pipeline.Register("rotate", newRotate)
	pipeline.Register("random_erasing", newRandomErasing)
}
