// Package imgproc implements the image primitives the loader and its
// operations need on interleaved 8-bit images (HWC layout: rows of pixels,
// each pixel a run of channel bytes): pure functions of ([]byte, h, w, ch)
// and their arguments, with scratch types where they need buffers.
//
// ResizeArea reproduces OpenCV's cv2.resize with INTER_AREA, so pipelines
// ported from FFCV (which uses OpenCV) see the same pixels. It follows
// OpenCV's three code paths (integer-factor averaging, fractional area
// weights in float32, fixed-point bilinear for upscaling) down to the
// rounding, and matches OpenCV 4.x/5.x bit for bit on the golden files in
// testdata; OpenCV's SIMD and scalar tails round a few ties differently, so
// ±1 is possible in principle.
//
// ResizeAreaRegion extends the same box filter to a sub-pixel source
// rectangle, which the JPEG decoder uses after DCT-domain downscaling.
//
// The colour, sharpness, blur and affine kernels (Brightness, Contrast,
// Saturation, Hue, Grayscale, Posterize, Solarize, Invert, Autocontrast,
// Equalize, Sharpen, Blurrer.GaussianBlur, Warp, Rotate, Shift) reproduce
// torchvision.transforms.v2.functional on uint8 tensors, float32 rounding
// for float32 rounding: their tests hold each against a transcription of
// torch's steps, byte for byte. Saturation and Sharpen take a factor's
// table (NewSaturationTable, NewSharpenTable) from callers whose factors
// recur, such as the augmentation policies.
//
// A Resizer caches weight tables and scratch rows between calls, so the hot
// loop does not allocate, and a Blurrer its scratch rows; neither is safe
// for concurrent use.
package imgproc
