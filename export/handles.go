package main

import (
	"fmt"
	"sync"
)

// handleTable maps the integer handles C callers hold to Go objects, so no Go
// pointer ever crosses the boundary and a stale handle is an error, not a crash.
type handleTable struct {
	mu   sync.Mutex
	m    map[int64]any
	next int64
}

var handles = handleTable{m: map[int64]any{}}

func (t *handleTable) add(obj any) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.m[t.next] = obj
	return t.next
}

func (t *handleTable) remove(h int64) (any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	obj, ok := t.m[h]
	if !ok {
		return nil, fmt.Errorf("invalid or closed handle %d", h)
	}
	delete(t.m, h)
	return obj, nil
}

func (t *handleTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// lookup returns the object behind h if it has type T.
func lookup[T any](h int64) (T, error) {
	handles.mu.Lock()
	obj, ok := handles.m[h]
	handles.mu.Unlock()
	t, isT := obj.(T)
	if !ok {
		return t, fmt.Errorf("invalid or closed handle %d", h)
	}
	if !isT {
		var zero T
		return zero, fmt.Errorf("handle %d is a %T, not a %T", h, obj, zero)
	}
	return t, nil
}
