package loader

import (
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
)

// ImageAspects is every sample's image aspect (height / width) in the
// file's RGBImageField, the rect order's key: there must be exactly one
// such field, so that the order and the letterbox that gives each batch
// its shape (rgb_letterbox with rect) sort by the same images.
func ImageAspects(r *beton.Reader) ([]float64, error) {
	f := -1
	for i, d := range r.Fields {
		if d.Type == field.RGBImage {
			if f >= 0 {
				return nil, fmt.Errorf("the rect order sorts by the image's aspect ratio: the file has two "+
					"RGBImageFields (%q, %q)", r.Fields[f].Name, d.Name)
			}
			f = i
		}
	}
	if f < 0 {
		return nil, fmt.Errorf("the rect order sorts by the image's aspect ratio: the file has no RGBImageField")
	}
	out := make([]float64, r.NumSamples())
	for i := range out {
		col, err := r.Column(uint64(i), f)
		if err != nil {
			return nil, err
		}
		out[i] = field.ParseRGBMeta(col).Aspect()
	}
	return out, nil
}

// newRect reads the aspects of a rect loader.
func (l *Loader) newRect() error {
	switch {
	case l.cfg.Mixture != nil:
		return fmt.Errorf("the rect order sorts one dataset's images by aspect; a mixture draws its sources by weight")
	case l.cfg.World > 1:
		return fmt.Errorf("the rect order (validation batches by aspect ratio) runs on one process; " +
			"give each rank a loader of its own part with indices=")
	}
	a, err := ImageAspects(l.r)
	l.aspects = a
	return err
}
