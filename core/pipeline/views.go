package pipeline

import "github.com/ffcv-go/ffcv-go/core/jpeg"

// Views of one image: programs whose crop decoders read the same JPEG field
// share the decode of each sample's entropy-coded data (jpeg.Decoder's view
// sessions). The worker runs a sample's programs one after the other with
// one Ctx, so the first view of a sample starts a session and the others
// join it; every view still does its own region IDCT, crop and resize.

// ShareViews marks the crop decoders of progs that read a field two or more
// of them decode, so that they share each sample's entropy decoding.
func ShareViews(progs []*Program) {
	byField := map[int][]*cropRGB{}
	for _, p := range progs {
		if len(p.ops) > 0 {
			if d, ok := p.ops[0].(*cropRGB); ok {
				byField[p.Field] = append(byField[p.Field], d)
			}
		}
	}
	for f, ds := range byField {
		if len(ds) < 2 {
			continue
		}
		for _, d := range ds {
			d.shareField = f + 1
		}
		ds[len(ds)-1].lastView = true // the worker runs the programs in order
	}
}

// viewKey names the image a view session decodes: one field of one sample
// (its position in one epoch's order).
type viewKey struct {
	epoch, pos uint64
	field      int
}

// viewDecoder returns the worker's JPEG decoder ready for a crop of c's
// sample: in a session with the other views of the sample's field when the
// decoder d is shared, out of any session otherwise.
func (d *cropRGB) viewDecoder(c *Ctx) *jpeg.Decoder {
	if d.shareField == 0 {
		return soloDecoder(c)
	}
	dec := decoderOf(c)
	if k := (viewKey{c.Epoch, c.Pos, d.shareField}); k != c.views {
		dec.BeginViews()
		c.views = k
	}
	return dec
}

// soloDecoder returns the worker's JPEG decoder out of any view session.
func soloDecoder(c *Ctx) *jpeg.Decoder {
	dec := decoderOf(c)
	if c.views != (viewKey{}) {
		dec.EndViews()
		c.views = viewKey{}
	}
	return dec
}
