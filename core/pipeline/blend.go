package pipeline

import (
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/internal/rng"
	"github.com/ffcv-go/ffcv-go/core/trace"
)

// Blending: an operation that blends the sample with a partner sample run
// through the same operations before it (YOLO's MixUp: a second mosaic,
// warped by its own draws). Build wraps such a Blender in a stage that
// runs the program's earlier operations on the partner, as if the partner
// sat at another position of the epoch (PartnerPos), then hands both
// outputs to Blend; targets follow both (Geometry.Pieces).

// Blender is an operation that blends the sample with a partner.
type Blender interface {
	Op
	// Partner is the draw of the sample in c under key: whether the
	// operation applies, and the partner sample.
	Partner(c *Ctx, key int) (sample uint64, ok bool)
	// Blend writes into out the blend of own (the sample's input) and
	// other (the partner's, through the same operations): the draw
	// Partner made.
	Blend(c *Ctx, key int, own, other, out []byte) error
}

// PartnerPos is the position whose randomness a blended partner draws
// with: the sample at pos blending under key. Its top bit keeps it apart
// from every real position.
func PartnerPos(pos uint64, key int) uint64 {
	return rng.Mix(pos*rng.Golden+uint64(key)+0x2545f4914f6cdd1d) | 1<<63
}

// blendStage runs a Blender at place i of program p.
type blendStage struct {
	b   Blender
	p   *Program
	i   int
	r   *beton.Reader
	buf string // its per-worker buffers' name in Ctx.State
}

func (s *blendStage) Out(in Spec) (Spec, error) { return s.b.Out(in) }
func (s *blendStage) InPlace() bool             { return true }

// blendBuf is a worker's buffers for a partner's run.
type blendBuf struct {
	s     Scratch
	other []byte
}

func (s *blendStage) Run(c *Ctx, key int, in, out []byte) error {
	partner, ok := s.b.Partner(c, key)
	if !ok {
		CopyIfNeeded(out, in)
		return nil
	}
	buf := c.State(s.buf, func() any { return &blendBuf{} }).(*blendBuf)
	buf.other = Grow(buf.other, len(in))
	if c.Times != nil {
		// The partner's run is this stage's time (Ops): its decoder's
		// reads and entropy decoding are not the sample's own.
		read, entropy := c.Times[trace.Read], c.Times[trace.Entropy]
		defer func() { c.Times[trace.Read], c.Times[trace.Entropy] = read, entropy }()
	}
	if err := withPartner(c, s.r, s.p.Field, partner, key, func() error {
		return s.p.runPrefix(c, &buf.s, s.i, buf.other)
	}); err != nil {
		return fmt.Errorf("partner sample %d: %w", partner, err)
	}
	return s.b.Blend(c, key, in, buf.other, out)
}

// withPartner runs fn with c set up as the partner sample of the sample
// in c (at PartnerPos), field f's bytes read from r, then restores c.
func withPartner(c *Ctx, r *beton.Reader, f int, partner uint64, key int, fn func() error) error {
	sample, pos, col, heap, read := c.Sample, c.Pos, c.Col, c.Heap, c.Read
	defer func() { c.Sample, c.Pos, c.Col, c.Heap, c.Read = sample, pos, col, heap, read }()
	c.Sample, c.Pos = partner, PartnerPos(pos, key)
	c.Read = func(f int) ([]byte, []byte, error) { return r.Read(partner, f) }
	if r != nil && f >= 0 {
		var err error
		if c.Col, c.Heap, err = r.Read(partner, f); err != nil {
			return err
		}
	}
	return fn()
}

// runPrefix runs the program's first n operations on the sample in c, a
// blend's partner, the last writing into out. Blends among them pass
// their input on: a partner goes through the operations before the blends
// alone (Ultralytics' pre_transform: CutMix's partner is not itself mixed
// up).
func (p *Program) runPrefix(c *Ctx, s *Scratch, n int, out []byte) error {
	var in []byte
	for i, op := range p.ops[:n] {
		dst := out
		if i < n-1 {
			if i%2 == 0 {
				s.a = Grow(s.a, p.specs[i].Bytes())
				dst = s.a
			} else {
				s.b = Grow(s.b, p.specs[i].Bytes())
				dst = s.b
			}
		}
		if _, ok := op.(*blendStage); ok {
			copy(dst, in)
			in = dst
			continue
		}
		if err := op.Run(c, p.keys[i], in, dst); err != nil {
			return fmt.Errorf("%s: %w", p.labels[i], err)
		}
		in = dst
	}
	return nil
}

// wrapBlender makes the op at place i of p, a Blender, run its partner
// through the ops before it.
func (p *Program) wrapBlender(r *beton.Reader, i int, b Blender, name string, tail bool) (Op, error) {
	if tail || i == 0 {
		return nil, fmt.Errorf("%s blends with a partner run through the operations before it: "+
			"it needs the image decoder and built-in operations before it, without a Python stage", name)
	}
	// Each stage has its own buffers: a later blend (CutMix after MixUp)
	// runs an earlier one inside its partner's run.
	return &blendStage{b: b, p: p, i: i, r: r, buf: fmt.Sprintf("blend:%p:%d", p, i)}, nil
}

// Cutter is a Blender that shows only part of its partner (CutMix): the
// partner's pieces, as the steps before it place them, become the pieces
// Cut returns (some rows, clipped to the area it pastes).
type Cutter interface {
	Blender
	Cut(c *Ctx, key int, own, partner, dst []Piece) ([]Piece, error)
}

// PartnerPieces appends to dst the pieces of the partner that the sample
// in c blends with under key, through g's steps: what a Blender placed
// after g's operations receives as its partner's output.
func (g *Geometry) PartnerPieces(c *Ctx, r interface {
	Column(uint64, int) ([]byte, error)
}, partner uint64, key int, dst []Piece) ([]Piece, error) {
	err := withPartner(c, nil, -1, partner, key, func() error {
		var err error
		dst, err = g.piecesUpTo(c, r, dst, len(g.steps), true)
		return err
	})
	return dst, err
}
