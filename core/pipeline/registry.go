package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// Factory builds an operation from its spec ({"op": name, "key"?, "seed"?,
// ...arguments}) for the field env describes. It reads its arguments with
// Parse and checks every one of them before it consults env (NeedFile,
// NeedType), so that Check can build it without a file; Op.Out checks its
// input. Its errors name an argument as the op's Python constructor names
// it (solarize's "p" is solarization_prob) and leave the op's name to the
// caller: Build puts the spec's op name before them, Python its class name.
type Factory func(env Env, spec json.RawMessage) (Op, error)

// BatchFactory builds a batch operation from its spec.
type BatchFactory func(spec json.RawMessage) (BatchOp, error)

var (
	registry      = map[string]Factory{}
	decoders      = map[string]bool{} // the operations that read a sample from the file
	batchRegistry = map[string]BatchFactory{}
)

// Register makes an operation available to Build under name. Op families
// call it from their init; it panics when name is taken.
func Register(name string, f Factory) {
	if _, ok := registry[name]; ok || batchRegistry[name] != nil {
		panic(fmt.Sprintf("pipeline: operation %q registered twice", name))
	}
	registry[name] = f
}

// RegisterDecoder registers an operation that reads a sample from the file
// (Ctx.Col, Ctx.Heap): first in a program, never in a tail.
func RegisterDecoder(name string, f Factory) {
	Register(name, f)
	decoders[name] = true
}

// RegisterBatch registers an operation on whole batches, which runs after
// every sample of the batch is decoded.
func RegisterBatch(name string, f BatchFactory) {
	if _, ok := registry[name]; ok || batchRegistry[name] != nil {
		panic(fmt.Sprintf("pipeline: operation %q registered twice", name))
	}
	batchRegistry[name] = f
}

// Names lists the registered per-sample operations, decoders included.
func Names() []string { return sortedKeys(registry) }

// BatchNames lists the registered batch operations.
func BatchNames() []string { return sortedKeys(batchRegistry) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// New builds the per-sample operation spec names, for env's field: as
// Build builds each of its operations, without checking its input.
func New(env Env, spec json.RawMessage) (Op, error) {
	head, err := ParseHead(spec)
	if err != nil {
		return nil, err
	}
	mk, ok := registry[head.Op]
	if !ok {
		return nil, fmt.Errorf("unknown operation %q", head.Op)
	}
	return mk(env, spec)
}

// NewBatch builds the batch operation spec names.
func NewBatch(spec json.RawMessage) (BatchOp, error) {
	head, err := ParseHead(spec)
	if err != nil {
		return nil, err
	}
	mk, ok := batchRegistry[head.Op]
	if !ok {
		return nil, fmt.Errorf("unknown batch operation %q", head.Op)
	}
	return mk(spec)
}

// Check builds the operation spec names, per-sample or batch, without a
// file: it checks the operation's arguments, and nothing its field or input
// decides. This is how an operation's bad argument is reported where the
// user writes it, before any loader exists.
func Check(spec json.RawMessage) error {
	head, err := ParseHead(spec)
	if err != nil {
		return fmt.Errorf("operation spec: %w", err)
	}
	if mk, ok := batchRegistry[head.Op]; ok {
		_, err := mk(spec)
		return err
	}
	mk, ok := registry[head.Op]
	if !ok {
		return fmt.Errorf("unknown operation %q", head.Op)
	}
	if _, err := mk(Env{}, spec); err != nil && !errors.Is(err, ErrNoFile) {
		return err
	}
	return nil
}
