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
	d.BeginViews()
	defer d.EndViews()
	var errs []error
	var sum Timing
	for i, v := range views {
		if err := d.DecodeView(data, v, i == len(views)-1); err != nil {
			errs = append(errs, &ViewError{View: i, Err: err})
			continue
		}
		t := d.LastTiming()
		sum.Copy += t.Copy
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

// BeginViews starts a view session: the DecodeView calls that follow, up to
// EndViews or the next BeginViews, are views of one image and share its
// entropy decoding as DecodeViews' views do. It is DecodeViews for a caller
// that decodes one view at a time, such as a loader running each view's
// pipeline in turn.
func (d *Decoder) BeginViews() {
	if d.c == nil {
		return
	}
	C.ffj_share_reset(d.c)
	d.session, d.owned = true, false
}

// EndViews ends the view session, if any; the decodes that follow are on
// their own again.
func (d *Decoder) EndViews() { d.session, d.owned = false, false }

// DecodeView decodes one view of the session's image, to the pixels
// DecodeCropResizeFlip(data, v.Crop, v.W, v.H, v.Dst, v.Flip) gives. Every
// call of a session must pass the same image: the first copies it, the
// others decode that copy (data of another length restarts the session).
// last says no view of the session follows, so that nothing is kept for
// one. Outside a session DecodeView is DecodeCropResizeFlip.
func (d *Decoder) DecodeView(data []byte, v View, last bool) error {
	if !d.session {
		return d.DecodeCropResizeFlip(data, v.Crop, v.W, v.H, v.Dst, v.Flip)
	}
	if err := d.check(data); err != nil {
		return err
	}
	var cp time.Duration
	if !d.owned || len(data) != len(d.viewSrc) {
		if d.owned {
			C.ffj_share_reset(d.c)
		}
		// Its own copy (see own): plain decodes in the session reuse src.
		t0 := time.Now()
		d.viewSrc = append(d.viewSrc[:0], data...)
		cp = time.Since(t0)
		d.owned = true
	}
	// Only this call shares: a plain decode in the session decodes its own data.
	d.shared = C.FFJ_SHARE_KEEP
	if last {
		d.shared = C.FFJ_SHARE_READ
	}
	defer func() { d.shared = 0 }()
	err := d.DecodeCropResizeFlip(d.viewSrc, v.Crop, v.W, v.H, v.Dst, v.Flip)
	if err == nil && d.timed {
		d.timing.Copy = int64(cp)
	}
	return err
}

// SessionDecodes is how many restart intervals the current or last view
// session has entropy-decoded: fewer than its views decode on their own when
// they share.
func (d *Decoder) SessionDecodes() int {
	n := 0
	for _, c := range d.intervalDecodes() {
		n += c
	}
	return n
}
