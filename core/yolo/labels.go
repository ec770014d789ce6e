// Package yolo reads datasets in the Ultralytics YOLO layout: a dataset
// YAML, image folders or lists, and one label text file per image.
package yolo

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Task is what a label line holds.
type Task string

// The tasks whose label lines Parse reads.
const (
	Detect  Task = "detect"  // cls cx cy w h
	Segment Task = "segment" // cls x1 y1 ... xn yn, n >= 3
	Pose    Task = "pose"    // cls cx cy w h, then kpt_shape[0] points of kpt_shape[1] values
)

// Tolerance is how far outside [0, 1] a normalized coordinate may lie
// (then clipped to it). Ultralytics refuses any coordinate above 1 or below
// 0; this reads every file it reads, and also those whose exporter rounded
// a coordinate just past the edge (a box touching it).
const Tolerance = 0.01

// Format says how label lines are read.
type Format struct {
	Task       Task
	NumClasses int    // class ids are 0 .. NumClasses-1
	Keypoints  [2]int // pose: points per object and values per point (2: x y, 3: x y visibility)
	// SegmentPoints (segment): every polygon resampled to this many points
	// (Resample); 0 keeps them as written.
	SegmentPoints int
}

// Object is one label line, coordinates normalized and clipped to [0, 1].
type Object struct {
	Class int
	Box   [4]float64 // x0, y0, x1, y1
	// Polygon (segment) is x, y pairs; Points (pose) Keypoints[0] points of
	// Keypoints[1] values each, flattened.
	Polygon []float64
	Points  []float64
}

// LineError is a label line that cannot be read.
type LineError struct {
	Line int // 1-based
	Msg  string
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Check reports a Format that no label line could satisfy.
func (f Format) Check() error {
	switch f.Task {
	case Detect, Segment:
	case Pose:
		if f.Keypoints[0] < 1 || (f.Keypoints[1] != 2 && f.Keypoints[1] != 3) {
			return fmt.Errorf("pose needs kpt_shape [points, 2 or 3], got %v", f.Keypoints)
		}
	default:
		return fmt.Errorf("task %q is not detect, segment or pose", f.Task)
	}
	if f.NumClasses < 1 {
		return fmt.Errorf("no class names")
	}
	if f.SegmentPoints != 0 && (f.Task != Segment || f.SegmentPoints < 3) {
		return fmt.Errorf("segment_points %d: a segment dataset's polygons need at least 3", f.SegmentPoints)
	}
	return nil
}

// Parse reads a label file's lines; blank lines are skipped, an empty file
// is an image without objects.
func Parse(data []byte, f Format) ([]Object, error) {
	var out []Object
	for n, line := range bytes.Split(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		o, err := ParseLine(string(line), f)
		if err != nil {
			return nil, &LineError{Line: n + 1, Msg: err.Error()}
		}
		out = append(out, o)
	}
	return out, nil
}

// ParseLine reads one label line.
func ParseLine(line string, f Format) (Object, error) {
	cols := strings.Fields(line)
	if len(cols) == 0 {
		return Object{}, fmt.Errorf("empty line")
	}
	v := make([]float64, len(cols))
	for k, c := range cols {
		x, err := strconv.ParseFloat(c, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return Object{}, fmt.Errorf("column %d: %q is not a number", k+1, c)
		}
		v[k] = x
	}
	var o Object
	if v[0] != math.Trunc(v[0]) || v[0] < 0 || v[0] >= float64(f.NumClasses) {
		return o, fmt.Errorf("class id %s is not one of the %d names (0 to %d)", cols[0], f.NumClasses, f.NumClasses-1)
	}
	o.Class = int(v[0])
	coords := v[1:]
	switch f.Task {
	case Detect:
		if len(coords) == 4 {
			break
		}
		// Ultralytics reads a polygon in a detection dataset as its bounding box.
		if len(coords) < 6 || len(coords)%2 != 0 {
			return o, fmt.Errorf("%d columns: a detection line is cls cx cy w h (5 columns) or cls and a polygon", len(cols))
		}
	case Segment:
		if len(coords)%2 != 0 {
			return o, fmt.Errorf("%d columns: a segment line is cls x1 y1 ... xn yn (an odd number of columns)", len(cols))
		}
		if len(coords) < 6 {
			hint := ""
			if len(coords) == 4 {
				hint = " (cls cx cy w h is a detection line: task 'detect')"
			}
			return o, fmt.Errorf("a polygon of %d points: it needs at least 3%s", len(coords)/2, hint)
		}
	case Pose:
		want := 5 + f.Keypoints[0]*f.Keypoints[1]
		if len(cols) != want {
			return o, fmt.Errorf("%d columns: a pose line with kpt_shape %v has %d (cls cx cy w h, then %d per point)",
				len(cols), f.Keypoints, want, f.Keypoints[1])
		}
	}
	// Range: box or polygon coordinates, and the points' x and y (not visibility).
	check := func(k int, x float64) (float64, error) {
		if x < -Tolerance || x > 1+Tolerance {
			return 0, fmt.Errorf("column %d: coordinate %s is outside [0, 1] (normalized coordinates)", k+2, cols[k+1])
		}
		return min(max(x, 0), 1), nil
	}
	head := coords
	if f.Task == Pose {
		head = coords[:4]
	}
	if len(head) == 4 {
		var b [4]float64
		for k, x := range head {
			c, err := check(k, x)
			if err != nil {
				return o, err
			}
			b[k] = c
		}
		o.Box = [4]float64{max(b[0]-b[2]/2, 0), max(b[1]-b[3]/2, 0), min(b[0]+b[2]/2, 1), min(b[1]+b[3]/2, 1)}
	} else {
		o.Polygon = make([]float64, len(head))
		for k, x := range head {
			c, err := check(k, x)
			if err != nil {
				return o, err
			}
			o.Polygon[k] = c
		}
		o.Box = bounds(o.Polygon)
		if f.Task == Detect {
			o.Polygon = nil
		}
	}
	if f.Task == Pose {
		d := f.Keypoints[1]
		o.Points = make([]float64, len(coords)-4)
		for k, x := range coords[4:] {
			if k%d < 2 {
				c, err := check(4+k, x)
				if err != nil {
					return o, err
				}
				x = c
			}
			o.Points[k] = x
		}
	}
	return o, nil
}

// bounds is the box around polygon xy (x0, y0, x1, y1).
func bounds(xy []float64) [4]float64 {
	b := [4]float64{xy[0], xy[1], xy[0], xy[1]}
	for k := 2; k < len(xy); k += 2 {
		b[0], b[1] = min(b[0], xy[k]), min(b[1], xy[k+1])
		b[2], b[3] = max(b[2], xy[k]), max(b[3], xy[k+1])
	}
	return b
}
