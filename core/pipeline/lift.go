package pipeline

import "fmt"

// Clips. A clip decoder's output is a stack of frames, (T, H, W, C) or
// (K, T, H, W, C), with Spec.Lead counting the leading dimensions. Build
// lifts every per-image operation after it over the frames: the operation
// runs on each frame in turn under its one randomness key, and Ctx.Rand
// gives the same numbers for a key whatever the frame, so an operation
// draws once per clip (one flip, one colour jitter, one blur for every
// frame), by construction rather than by each operation's care.

// Lifted is a per-image operation run on every frame of a clip.
type Lifted struct {
	op          Op
	frames      int // frames per sample: the product of the leading dimensions
	inFr, outFr int // bytes of one frame in and out
	inPlace     bool
}

// Lift returns op lifted over the frames of its input.
func Lift(op Op) *Lifted { return &Lifted{op: op} }

// Frame returns the operation each frame goes through.
func (l *Lifted) Frame() Op { return l.op }

func (l *Lifted) Out(in Spec) (Spec, error) {
	if in.Lead < 1 || in.Lead >= len(in.Shape) {
		return in, fmt.Errorf("lifting over %d leading dimensions of %v", in.Lead, in.Shape)
	}
	lead := in.Shape[:in.Lead]
	frame := Spec{Shape: in.Shape[in.Lead:], DType: in.DType}
	out, err := l.op.Out(frame)
	if err != nil {
		return out, fmt.Errorf("on each frame of a clip: %w", err)
	}
	l.frames = 1
	for _, d := range lead {
		l.frames *= d
	}
	l.inFr, l.outFr = frame.Bytes(), out.Bytes()
	ip, ok := l.op.(InPlacer)
	l.inPlace = ok && ip.InPlace() && l.inFr == l.outFr
	return Spec{Shape: append(append([]int(nil), lead...), out.Shape...), DType: out.DType, Lead: in.Lead}, nil
}

func (l *Lifted) InPlace() bool { return l.inPlace }

func (l *Lifted) Run(c *Ctx, key int, in, out []byte) error {
	for f := 0; f < l.frames; f++ {
		if err := l.op.Run(c, key, in[f*l.inFr:(f+1)*l.inFr], out[f*l.outFr:(f+1)*l.outFr]); err != nil {
			return err
		}
	}
	return nil
}
