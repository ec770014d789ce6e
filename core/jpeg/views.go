package jpeg

/*
#include "ffjpeg.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"image"
	"time"
)

// A View is one crop of an image to decode with DecodeViews: the arguments
// of a DecodeCropResizeFlip call but the data. Dst receives W×H RGB pixels
// and must hold at least W*H*3 bytes.
type View struct {
	Crop image.Rectangle
	W, H int
	Dst  []byte
	Flip bool
}

// A ViewError is the error of one view of DecodeViews.
type ViewError struct {
	View int // index in the views
	Err  error
}

func (e *ViewError) Error() string { return fmt.Sprintf("view %d: %v", e.View, e.Err) }

func (e *ViewError) Unwrap() error { return e.Err }

// DecodeViews decodes several views of the image in data, each to the very
// pixels DecodeCropResizeFlip(data, v.Crop, v.W, v.H, v.Dst, v.Flip) gives,
// for the multi-crop augmentations of self-supervised training (SimCLR's
// two views, DINO's two global and several local ones). The views overlap,
// so for a JPEG that DecodeCropResize cuts at its restart markers (as
// Encode and Transcode write them) each restart interval is entropy-decoded
// at most once for all of them: the first view that needs it keeps its
// coefficients, which do not depend on the DCT scale, and the others copy
// them. Each view still does its own IDCT at its own scale, and its own
// resize. Other JPEGs (no restart markers, progressive) are decoded once
// per view.
//
// Every view is decoded, even after one fails: a view fails when data is
// damaged where it needs it, as DecodeCropResizeFlip would, whatever the
// other views decoded. The error joins (errors.Join) a *ViewError for each
// view that failed; such a view's Dst holds no valid pixels.
//
// A timed Decoder's LastTiming is the sum over the views, with the input
// copied once. The decoder keeps the coefficients the views share (up to
// 256 MiB, 3 bytes per pixel in 4:2:0) until the next DecodeViews.
func (d *Decoder) DecodeViews(data []byte, views []View) error {
	if err := d.check(data); err != nil {
		return err
	}
	t0 := time.Now()
	src := d.own(data)
	cp := time.Since(t0)
	C.ffj_share_reset(d.c)
	defer func() { d.shared = 0 }()
	var errs []error
	sum := Timing{Copy: int64(cp)}
	for i, v := range views {
		d.shared = C.FFJ_SHARE_KEEP
		if i == len(views)-1 {
			d.shared = C.FFJ_SHARE_READ // no view to keep coefficients for
		}
		if err := d.DecodeCropResizeFlip(src, v.Crop, v.W, v.H, v.Dst, v.Flip); err != nil {
			errs = append(errs, &ViewError{View: i, Err: err})
			continue
		}
		t := d.LastTiming()
		sum.Entropy += t.Entropy
		sum.Decode += t.Decode
	}
	d.timing = Timing{}
	if errs != nil {
		return errors.Join(errs...)
	}
	if d.timed {
		d.timing = sum
	}
	return nil
}
