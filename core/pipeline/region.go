package pipeline

import "image"

// Regions: an operation that reads only part of its input (a warp that
// crops, say) can tell the operation before it, which then need not make
// the rest. Build links each RegionWriter to a RegionReader right after
// it; the writer asks, per sample, for the rectangle the reader will read
// and leaves the pixels outside it unwritten. Results are those of the
// two run apart: the reader never looks outside its rectangle.

// RegionReader is an operation that reads only a rectangle of its input.
type RegionReader interface {
	Op
	// Reads is the rectangle of a w×h input (in pixels) that the operation
	// reads for the sample in c under key: every pixel its output depends on.
	Reads(c *Ctx, key, w, h int) image.Rectangle
}

// RegionWriter is an operation that can write only part of its output.
type RegionWriter interface {
	Op
	// ReadBy links the operation to the next one, whose randomness key is
	// key: from then on Run writes only what next Reads.
	ReadBy(next RegionReader, key int)
}

// linkRegions links each RegionWriter of ops to a RegionReader after it.
// An in-place reader is left alone: it writes its whole output over its
// input, so everything of its input must be there.
func linkRegions(ops []Op, keys []int) {
	for i := 0; i+1 < len(ops); i++ {
		w, ok := ops[i].(RegionWriter)
		r, rok := ops[i+1].(RegionReader)
		if !ok || !rok {
			continue
		}
		if ip, ok := ops[i+1].(InPlacer); ok && ip.InPlace() {
			continue
		}
		w.ReadBy(r, keys[i+1])
	}
}
