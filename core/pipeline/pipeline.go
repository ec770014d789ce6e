// Package pipeline turns a field's list of operations into a per-sample
// program: a decoder followed by transforms, with the shape and dtype of
// every stage inferred once, run by each worker straight into the batch
// slot; batch operations (mixup) may follow.
//
// This package is the framework: Program, Build and BuildTail; Ctx, with
// each operation's randomness (Ctx.Rand, keyed by SeedKey and Head.KeyAt)
// and per-worker state; the interfaces an operation implements (Op,
// InPlacer, Geometric or Photometric, Mixer and Blender for those that show
// other samples, Reporter, Fuser, HFlip, ViewSharer, BatchOp); Geometry,
// which replays an image's operations for its targets;
// and the generic "label" op. The operations themselves live in families
// under it (basic, rgb, transform, ssl, policy, targets, text), which register
// into it, and their pixel work in core/imgproc. A program that builds
// programs from user specs imports them all with
//
//	import _ "github.com/ffcv-go/ffcv-go/core/pipeline/ops"
//
// # Adding an operation
//
// A family registers each operation under its name from an init function:
//
//	func init() {
//		pipeline.Register("my_op", newMyOp)          // a transform
//		pipeline.RegisterDecoder("my_dec", newMyDec) // reads the sample from the file: first in a program
//		pipeline.RegisterBatch("my_mix", newMyMix)   // runs on whole batches
//	}
//
// A Factory reads the operation's arguments with Parse (which rejects keys
// it does not declare) and checks every one of them before it consults the
// file (NeedFile, NeedType), so that Check, which Python's constructors call
// through the C ABI, refuses a bad argument without one; its errors name the
// argument as the Python constructor does. The Op's Out checks its input
// (NeedImage, CheckFill) and infers its output, and Run writes one sample,
// drawing its randomness from c.Rand(key) only, so that a sample's pixels
// depend on (seed, epoch, position, key) whatever worker runs it. Ops are
// shared by the workers: per-sample state lives on the stack or in
// c.State. An op that moves pixels implements Geometric, one that changes
// values only embeds PhotometricOp: targets follow the first and pass the
// second by, and refuse any other.
//
// Add the family's import to package ops, and its float-sensitive tests to
// the Makefile's arm64 lists.
package pipeline

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/internal/rng"
	"github.com/ffcv-go/ffcv-go/core/trace"
)

// Spec is the per-sample shape and numpy dtype ("|u1", "<f4", ...) of a stage.
type Spec struct {
	Shape []int  `json:"shape"`
	DType string `json:"dtype"`
	// Lead is the number of leading dimensions that index frames of a
	// clip ((T, H, W, C): 1; (K, T, H, W, C): 2); per-image operations
	// after a clip decoder are lifted over them (see Lift).
	Lead int `json:"lead,omitempty"`
}

// ItemSize is the byte size of one element.
func (s Spec) ItemSize() int {
	n, _ := strconv.Atoi(s.DType[2:])
	return n
}

// Bytes is the byte size of one sample.
func (s Spec) Bytes() int {
	n := s.ItemSize()
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// Ctx is a worker's per-sample context: where the sample comes from, its
// deterministic randomness and reusable scratch state.
type Ctx struct {
	Sample uint64 // index in the file
	Pos    uint64 // position in the epoch's order: the key of its randomness
	Seed   uint64
	Epoch  uint64
	Col    []byte // metadata column of the program's field
	Heap   []byte // its heap bytes (nil for Int and Float)
	// Read returns another field's column and heap bytes for this sample
	// (targets that follow another field); nil where nothing provides it.
	Read func(field int) (col, heap []byte, err error)
	// Times, when not nil, gets the time of each stage added up (see
	// Program.Run); nil leaves the programs untimed.
	Times *trace.Times
	// OpTimes, when not nil with Times, gets each operation's own time
	// (the worker's, handed to Program.OpTotals with its spans).
	OpTimes *trace.OpTimes

	pcg   rand.PCG
	rng   *rand.Rand
	state map[string]any // per-worker objects (codecs, buffers), by name
}

// NewCtx returns a worker context.
func NewCtx() *Ctx {
	c := &Ctx{state: map[string]any{}}
	c.rng = rand.New(&c.pcg)
	return c
}

// Rand returns the generator for operation op of the current sample. It is a
// pure function of (seed, epoch, position, op), so results do not depend on
// which worker runs the sample or when.
func (c *Ctx) Rand(op int) *rand.Rand {
	c.pcg.Seed(mix(c.Seed, c.Epoch), mix(c.Pos, uint64(op)+rng.Golden))
	return c.rng
}

// State returns a per-worker object, creating it with mk on first use.
func (c *Ctx) State(name string, mk func() any) any {
	v, ok := c.state[name]
	if !ok {
		v = mk()
		c.state[name] = v
	}
	return v
}

// Close releases per-worker objects that need it.
func (c *Ctx) Close() {
	for _, v := range c.state {
		if cl, ok := v.(interface{ Close() }); ok {
			cl.Close()
		}
	}
	c.state = map[string]any{}
}

// SeedKey is the randomness key of an operation given "seed": ops with the
// same seed draw the same numbers for a sample whichever pipeline or position
// they are in, which is how a Label* op in the label pipeline reproduces the
// parameters its image op drew. Negative, so never a positional key.
func SeedKey(seed uint32) int { return -1 - int(seed) }

// Head is what every operation spec carries besides its arguments: its
// name, and what decides its randomness key.
type Head struct {
	Op   string  `json:"op"`
	Key  *int    `json:"key"`  // set by the caller: the op's place among its pipeline's built-in ops, view included
	Seed *uint32 `json:"seed"` // the user's seed: shared with every op given the same one
	// Class is the operation as the user wrote it (the Python class,
	// RandomResizedCropRGBImageDecoder for "rgb_rrc"): errors name it.
	Class string `json:"class"`
}

// Name is the operation's name for messages: the user's, else the spec's.
func (h Head) Name() string {
	if h.Class != "" {
		return h.Class
	}
	return h.Op
}

// ParseHead reads the head of an operation spec.
func ParseHead(raw json.RawMessage) (Head, error) {
	var h Head
	err := json.Unmarshal(raw, &h)
	return h, err
}

// KeyAt is the randomness key of the op at position pos of its program: the
// seed's key when it has one, else its "key", else pos. Every path that
// draws what an op draws (its program, the targets that follow it, a
// Label op) gets the key here.
func (h Head) KeyAt(pos int) int {
	switch {
	case h.Seed != nil:
		return SeedKey(*h.Seed)
	case h.Key != nil:
		return *h.Key
	}
	return pos
}

// mix is SplitMix64's finaliser over a pair, to derive independent seeds.
func mix(a, b uint64) uint64 {
	return rng.Mix(a*rng.Golden + b + 0x632be59bd9b4e019)
}

// Op is one built-in operation. Out infers its output from its input (the
// zero Spec for a decoder); Run writes the output of one sample into out.
type Op interface {
	Out(in Spec) (Spec, error)
	Run(c *Ctx, op int, in, out []byte) error
}

// InPlacer is implemented by operations that may run with in and out the same.
type InPlacer interface{ InPlace() bool }

// Env is what an operation may consult when it is built.
type Env struct {
	Reader *beton.Reader
	Field  int
	Desc   field.Desc
	// Sources are a mixture's sources in the user's order (nil when the
	// reader is one dataset), for operations that read one by name.
	Sources []Source
}

// Source is a source of a mixture as operations see it: samples [Start,
// Start+Size) of Reader, which is the mixture's for a source its epochs
// take, its own for a side source (of weight 0).
type Source struct {
	Name        string
	Reader      *beton.Reader
	Start, Size uint64
}

// Program is a field's compiled pipeline: per-sample operations, then
// optionally batch operations.
type Program struct {
	Field int
	// SampleOut is what the per-sample part writes; Out what the program
	// produces (they differ only when there are batch operations).
	SampleOut Spec
	Out       Spec
	// In is the input of a tail program (the zero Spec for one starting
	// with a decoder).
	In    Spec
	ops   []Op
	specs []Spec // output of each op
	names []string
	// keys[i] is op i's randomness key: its index among the built-in
	// operations of the user's whole pipeline, so a Python stage inserted
	// before it changes nothing it draws.
	keys   []int
	direct int // first op writing straight into the output, computed by Build
	batch  []BatchOp
	bspecs []Spec
	bnames []string // the batch ops as the user wrote them, for messages
	// labels are the per-sample ops as the user wrote them (names has the
	// core's), for messages.
	labels []string
	// opTimes sums each per-sample op's time when workers time them.
	opTimes *trace.OpTotals
}

// HasBatchOps reports whether the program ends with batch operations, which
// need the per-sample outputs staged in a separate buffer.
func (p *Program) HasBatchOps() bool { return len(p.batch) > 0 }

// RunBatch runs the batch operations over n staged samples into out.
func (p *Program) RunBatch(b *BatchCtx, staged, out []byte, n int) error {
	in := staged
	for k, op := range p.batch {
		dst := out
		if k < len(p.batch)-1 {
			dst = make([]byte, n*p.bspecs[k].Bytes())
		}
		if err := op.RunBatch(b, in[:n*p.specOfBatchInput(k).Bytes()], dst, n); err != nil {
			return err
		}
		in = dst
	}
	return nil
}

func (p *Program) specOfBatchInput(k int) Spec {
	if k == 0 {
		return p.SampleOut
	}
	return p.bspecs[k-1]
}

// Build compiles ops (each {"op": name, "key"?: k, ...args}) for field f
// of r: a decoder, then transforms; for a mixture, sources are its
// sources (see Env).
func Build(r *beton.Reader, f int, ops []json.RawMessage, sources ...Source) (*Program, error) {
	return build(r, f, Spec{}, ops, sources)
}

// BuildTail compiles transforms (no decoder) that run on batches of in
// produced elsewhere: the built-in operations that follow a Python stage.
func BuildTail(r *beton.Reader, f int, in Spec, ops []json.RawMessage, sources ...Source) (*Program, error) {
	if in.DType == "" || len(in.DType) < 3 {
		return nil, fmt.Errorf("tail program needs an input dtype")
	}
	return build(r, f, in, ops, sources)
}

func build(r *beton.Reader, f int, in Spec, ops []json.RawMessage, sources []Source) (*Program, error) {
	if f < 0 || f >= len(r.Fields) {
		return nil, fmt.Errorf("field index %d out of range", f)
	}
	env := Env{Reader: r, Field: f, Desc: r.Fields[f], Sources: sources}
	p := &Program{Field: f, In: in}
	tail := in.DType != ""
	for i, raw := range ops {
		head, err := ParseHead(raw)
		if err != nil {
			return nil, fmt.Errorf("field %q, operation %d: %w", env.Desc.Name, i, err)
		}
		key := head.KeyAt(len(p.ops))
		if mkb, ok := batchRegistry[head.Op]; ok {
			if len(p.ops) == 0 && !tail {
				return nil, fmt.Errorf("field %q: %s needs a decoder before it", env.Desc.Name, head.Name())
			}
			op, err := mkb(raw)
			if err != nil {
				return nil, fmt.Errorf("field %q, %s: %w", env.Desc.Name, head.Name(), err)
			}
			out, err := op.Out(in)
			if err != nil {
				return nil, fmt.Errorf("field %q, %s: %w", env.Desc.Name, head.Name(), err)
			}
			p.batch, p.bspecs, p.bnames = append(p.batch, op), append(p.bspecs, out), append(p.bnames, head.Name())
			in = out
			continue
		}
		mk, ok := registry[head.Op]
		if !ok {
			return nil, fmt.Errorf("field %q: unknown operation %q", env.Desc.Name, head.Op)
		}
		if len(p.batch) > 0 {
			return nil, fmt.Errorf("field %q: per-sample operation %s after a batch operation", env.Desc.Name, head.Name())
		}
		op, err := mk(env, raw)
		if err != nil {
			return nil, fmt.Errorf("field %q, %s: %w", env.Desc.Name, head.Name(), err)
		}
		if in.Lead > 0 && !decoders[head.Op] {
			op = Lift(op)
		}
		if b, ok := op.(Blender); ok {
			if op, err = p.wrapBlender(r, len(p.ops), b, head.Name(), tail); err != nil {
				return nil, fmt.Errorf("field %q: %w", env.Desc.Name, err)
			}
		}
		out, err := op.Out(in)
		if err != nil {
			return nil, fmt.Errorf("field %q, %s: %w", env.Desc.Name, head.Name(), err)
		}
		if isDecoder := decoders[head.Op]; isDecoder == (len(p.ops) > 0 || tail) {
			if isDecoder {
				return nil, fmt.Errorf("field %q: decoder %s must come first", env.Desc.Name, head.Name())
			}
			return nil, fmt.Errorf("field %q: %s needs a decoder before it", env.Desc.Name, head.Name())
		}
		p.ops, p.specs, p.names = append(p.ops, op), append(p.specs, out), append(p.names, head.Op)
		p.labels = append(p.labels, head.Name())
		p.keys = append(p.keys, key)
		in = out
	}
	if len(p.ops) == 0 && !tail {
		return nil, fmt.Errorf("field %q: empty pipeline (needs a decoder)", env.Desc.Name)
	}
	p.Out = in
	p.SampleOut = p.In
	p.opTimes = trace.NewOpTotals(p.names)
	if len(p.specs) > 0 {
		p.SampleOut = p.specs[len(p.specs)-1]
		fuse(p.ops, p.keys)
		linkRegions(p.ops, p.keys)
		p.planDirect()
	}
	return p, nil
}

// HasSampleOps reports whether the program has per-sample operations.
func (p *Program) HasSampleOps() bool { return len(p.ops) > 0 }

// Ops returns the program's per-sample operations as Build made them: an
// operation another took into its own Run is Fused.
func (p *Program) Ops() []Op { return slices.Clone(p.ops) }

// Scratch holds a worker's intermediate buffers for one program.
type Scratch struct{ a, b []byte }

// planDirect finds the first stage that can write to the output directly:
// every later stage runs in place on a buffer of the same size.
func (p *Program) planDirect() {
	p.direct = len(p.ops) - 1
	for p.direct > 0 {
		ip, ok := p.ops[p.direct].(InPlacer)
		if !ok || !ip.InPlace() || p.specs[p.direct].Bytes() != p.specs[p.direct-1].Bytes() {
			break
		}
		p.direct--
	}
}

// Run runs the per-sample part for the sample in c, writing its output into
// out (len SampleOut.Bytes()). in is the sample's input for a tail program,
// nil for one starting with a decoder. Stages write into out directly when
// every later stage can work in place, otherwise through the scratch buffers.
func (p *Program) Run(c *Ctx, s *Scratch, in, out []byte) error {
	for i, op := range p.ops {
		var dst []byte
		switch {
		case i >= p.direct: // from here on every stage works in place in out
			dst = out
		case i%2 == 0:
			s.a = Grow(s.a, p.specs[i].Bytes())
			dst = s.a
		default:
			s.b = Grow(s.b, p.specs[i].Bytes())
			dst = s.b
		}
		var err error
		if c.Times == nil {
			err = op.Run(c, p.keys[i], in, dst)
		} else {
			err = p.runTimed(c, i, in, dst)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.labels[i], err)
		}
		in = dst
	}
	return nil
}

// OpTotals is the time each per-sample operation took in timed runs, by
// its name, in program order (a decoder's whole time, its read and entropy
// decoding included; a flip fused into the decoder before it takes none).
func (p *Program) OpTotals() []trace.OpTotal { return p.opTimes.Totals() }

// runTimed runs op i adding its time to c.Times: a decoder's to Decode,
// less what it reported itself as Read (copying its bytes) and Entropy;
// any other operation's to Ops. Each op's whole time also goes to
// c.OpTimes.
func (p *Program) runTimed(c *Ctx, i int, in, dst []byte) error {
	t := c.Times
	before := t[trace.Read] + t[trace.Entropy]
	t0 := time.Now()
	err := p.ops[i].Run(c, p.keys[i], in, dst)
	d := int64(time.Since(t0))
	c.OpTimes.Add(p.opTimes, i, d)
	if decoders[p.names[i]] {
		t[trace.Decode] += d - (t[trace.Read] + t[trace.Entropy] - before)
	} else {
		t[trace.Ops] += d
	}
	return err
}
