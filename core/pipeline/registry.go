package pipeline

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Factory builds an operation from its spec ({"op": name, "key"?, "seed"?,
// ...arguments}) for the field env describes. It reads its arguments with
// Parse and checks what it can before seeing its input (Op.Out checks the
// rest).
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
