// Package jpeg decodes and encodes baseline and progressive JPEG images with
// libjpeg-turbo through cgo.
//
// The hot path is Decoder.DecodeCropResize, which produces a resized crop of
// an image while decoding as little as possible: it lets libjpeg shrink the
// image in the DCT domain, decodes only the columns (jpeg_crop_scanline) and
// rows (jpeg_skip_scanlines, early stop) under the crop, and finishes with an
// OpenCV-compatible INTER_AREA resize from package imgproc. libjpeg still
// entropy-decodes whole rows, and every row above the crop; a JPEG with
// restart markers that line up with MCU rows, as Encode and Transcode write
// them, is instead cut at its markers into a smaller JPEG of only the
// intervals under the crop (ffregion.c), which decodes to the same pixels.
// Its intervals are entropy-decoded by a Huffman decoder of our own
// (ffhuff.c) in place of libjpeg's, which takes its slow path throughout any
// scan with restart markers; libjpeg does the rest.
//
// Self-supervised training cuts several overlapping crops (views) from each
// image. Decoder.DecodeViews decodes them all with the pixels separate calls
// give, but entropy-decodes each restart interval once: the coefficients
// do not depend on the DCT scale, so the first view that needs an interval
// keeps its blocks and the others copy them, each doing only its own IDCT
// at its own scale and its own resize. A caller that decodes one view at a
// time (the loader runs each view's pipeline in turn) does the same with a
// view session: BeginViews, then DecodeView per view.
//
// Pixels are 8-bit RGB, interleaved, in row-major (HWC) order. Grayscale and
// CMYK/YCCK images are converted to RGB.
//
// Corrupt or truncated data yields an error: libjpeg warnings about damaged
// data are treated as errors, since libjpeg would otherwise fill the damaged
// part with made-up pixels. Only the part of the stream that is actually
// decoded is checked, so DecodeCropResize accepts a file that is damaged only
// below the crop (with restart markers, only outside the intervals under it).
// Restart markers also catch damage inside: an interval whose Huffman
// decoding drifts does not end where its marker is, which is reported.
package jpeg
