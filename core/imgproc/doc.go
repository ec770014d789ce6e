// Package imgproc implements the small set of image primitives the loader
// needs on interleaved 8-bit images (HWC layout: rows of pixels, each pixel
// a run of channel bytes).
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
// A Resizer caches weight tables and scratch rows between calls, so the hot
// loop does not allocate; it is not safe for concurrent use.
package imgproc
