package pipeline

// Fusing: an operation may do the one after it in its own Run (a crop
// decoder flips while it resizes, writing the image once). Build asks each
// Fuser whether it takes the next operation; one taken is replaced by
// Fused, and the Fuser makes its draw (under its key, so every other
// operation draws what it did) and places its geometry. Results are those
// of the two run one after the other.

// Fuser is an operation that may take the operation after it.
type Fuser interface {
	Op
	// Fuse reports whether the operation takes next, whose randomness key
	// is key, into its own Run and Place.
	Fuse(next Op, key int) bool
}

// HFlip is a horizontal flip, which a Fuser before it may do itself.
type HFlip interface {
	Op
	// Flips is the flip's draw: whether it mirrors the sample in c under key.
	Flips(c *Ctx, key int) bool
}

// Fused stands in a program for an operation the one before it took: it
// passes the sample on, and moves nothing of its own.
type Fused struct{}

func (Fused) Out(in Spec) (Spec, error) { return in, nil }
func (Fused) InPlace() bool             { return true }

func (Fused) Run(_ *Ctx, _ int, in, out []byte) error {
	CopyIfNeeded(out, in)
	return nil
}

func (Fused) Place(_ *Ctx, _, w, h int) (Step, error) { return Same(w, h), nil }

// fuse lets each Fuser of ops take the operation after it; keys are the
// ops' randomness keys (Program.keys), kept as they were.
func fuse(ops []Op, keys []int) {
	for i := 0; i+1 < len(ops); i++ {
		if f, ok := ops[i].(Fuser); ok && f.Fuse(ops[i+1], keys[i+1]) {
			ops[i+1] = Fused{}
		}
	}
}
