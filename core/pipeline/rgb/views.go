package rgb

import (
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// Views of one image (see pipeline.ViewSharer): crop decoders of one JPEG
// field share the decode of each sample's entropy-coded data through
// jpeg.Decoder's view sessions. The worker runs a sample's programs one
// after the other with one Ctx, so the first view of a sample starts a
// session and the others join it; every view still does its own region
// IDCT, crop and resize.

// ShareViews makes the decoder share each sample's entropy decoding with
// the other programs of the worker that crop field f.
func (d *cropRGB) ShareViews(f int, last bool) { d.shareField, d.lastView = f+1, last }

// viewKey names the image a view session decodes: one field of one sample
// (its position in one epoch's order).
type viewKey struct {
	epoch, pos uint64
	field      int
}

// sessionOf is the image of the worker's view session (zero: none).
func sessionOf(c *pipeline.Ctx) *viewKey {
	return c.State("views", func() any { return new(viewKey) }).(*viewKey)
}

// viewDecoder returns the worker's JPEG decoder ready for a crop of c's
// sample: in a session with the other views of the sample's field when the
// decoder d is shared, out of any session otherwise.
func (d *cropRGB) viewDecoder(c *pipeline.Ctx) *jpeg.Decoder {
	if d.shareField == 0 {
		return soloDecoder(c)
	}
	dec := decoderOf(c)
	if s, k := sessionOf(c), (viewKey{c.Epoch, c.Pos, d.shareField}); k != *s {
		dec.BeginViews()
		*s = k
	}
	return dec
}

// soloDecoder returns the worker's JPEG decoder out of any view session.
func soloDecoder(c *pipeline.Ctx) *jpeg.Decoder {
	dec := decoderOf(c)
	if s := sessionOf(c); *s != (viewKey{}) {
		dec.EndViews()
		*s = viewKey{}
	}
	return dec
}
