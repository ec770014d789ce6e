package pipeline

import "math"

// Paster is an operation that pastes instances of the pieces its input
// shows back onto it (CopyPaste): targets get a piece per pasted
// instance, restricted to its row (Piece.Rows).
type Paster interface {
	Op
	// Paste appends to dst the pieces it pastes, given the pieces of its
	// input (own), for the sample in c: the choice its Run makes.
	Paste(c *Ctx, key int, own, dst []Piece) ([]Piece, error)
}

// Polygon maps a stored-image polygon (xy: x, y pairs, in place) through
// the map and clips it as YOLO clips segments, and returns the bounds of
// the clipped polygon (empty, all zero, when none of it shows).
//
// An axis-aligned stage clamps each point to what the stage shows (YOLO's
// Instances.clip). A stage that is not axis-aligned (RandomPerspective)
// maps the points, takes their box from the points that land on what it
// shows (Ultralytics' segment2box) and clamps every point to that box: a
// rotated object's box hugs its outline instead of bounding its rotated
// corners. A point behind a warp's horizon has no image: it counts for no
// box and is put on the box's nearest corner.
func (a Affine) Polygon(xy []float64) (box [4]float64) {
	n := len(xy) / 2
	if n == 0 {
		return box
	}
	for _, st := range a.stages() {
		if !st.warp {
			v := st.v
			for i := 0; i < n; i++ {
				x, y, _ := st.m.Apply(xy[2*i], xy[2*i+1])
				xy[2*i], xy[2*i+1] = clamp(x, v[0], v[2]), clamp(y, v[1], v[3])
			}
			continue
		}
		r := [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
		v := st.v
		for i := 0; i < n; i++ {
			x, y, ok := st.m.Apply(xy[2*i], xy[2*i+1])
			if !ok {
				x, y = math.NaN(), math.NaN()
			} else if x >= v[0] && x <= v[2] && y >= v[1] && y <= v[3] {
				r = [4]float64{min(r[0], x), min(r[1], y), max(r[2], x), max(r[3], y)}
			}
			xy[2*i], xy[2*i+1] = x, y
		}
		if r[0] > r[2] { // nothing shows
			clear(xy)
			return [4]float64{}
		}
		for i := 0; i < n; i++ {
			xy[2*i], xy[2*i+1] = clamp(xy[2*i], r[0], r[2]), clamp(xy[2*i+1], r[1], r[3])
		}
	}
	box = [4]float64{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	for i := 0; i < n; i++ {
		x, y := xy[2*i], xy[2*i+1]
		box = [4]float64{min(box[0], x), min(box[1], y), max(box[2], x), max(box[3], y)}
	}
	return box
}

// clamp puts x in [lo, hi]; NaN (no image) goes to lo.
func clamp(x, lo, hi float64) float64 {
	if !(x >= lo) {
		return lo
	}
	return min(x, hi)
}
