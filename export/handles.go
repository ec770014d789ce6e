package main

import (
	"fmt"
	"sync"
)

// handleTable maps the integer handles C callers hold to Go objects, so no Go
// pointer ever crosses the boundary and a stale handle is an error, not a crash.
type handleTable struct {
	mu   sync.Mutex
	m    map[int64]*handleEntry
	next int64
}

// handleEntry is one object and the calls using it right now: close waits
// for them, so no call runs on a closed object (unmapped memory).
type handleEntry struct {
	obj   any
	calls sync.WaitGroup
}

// stopper is implemented by objects whose calls may block for long (an
// iterator waiting for a batch): close stops them first so those calls return.
type stopper interface{ stop() }

var handles = handleTable{m: map[int64]*handleEntry{}}

func (t *handleTable) add(obj any) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.m[t.next] = &handleEntry{obj: obj}
	return t.next
}

// remove takes h out of the table, so no new call can start on it, then
// stops the object and waits for the calls in flight. The caller closes it.
// want, if not nil, rejects objects of another kind (leaving them in place).
func (t *handleTable) remove(h int64, want func(any) bool) (any, error) {
	t.mu.Lock()
	e, ok := t.m[h]
	if ok && want != nil && !want(e.obj) {
		t.mu.Unlock()
		return nil, handleError(fmt.Sprintf("handle %d is a %T", h, e.obj))
	}
	delete(t.m, h)
	t.mu.Unlock()
	if !ok {
		return nil, handleError(fmt.Sprintf("invalid or closed handle %d", h))
	}
	if s, ok := e.obj.(stopper); ok {
		s.stop()
	}
	e.calls.Wait()
	return e.obj, nil
}

func (t *handleTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// acquire returns the object behind h if it has type T, and done, which the
// caller defers: until then a concurrent close waits. done is never nil.
func acquire[T any](h int64) (obj T, done func(), err error) {
	handles.mu.Lock()
	e, ok := handles.m[h]
	if ok {
		if t, isT := e.obj.(T); isT {
			e.calls.Add(1)
			handles.mu.Unlock()
			return t, e.calls.Done, nil
		}
	}
	handles.mu.Unlock()
	if !ok {
		return obj, func() {}, handleError(fmt.Sprintf("invalid or closed handle %d", h))
	}
	return obj, func() {}, handleError(fmt.Sprintf("handle %d is a %T, not a %T", h, e.obj, obj))
}

// take removes h if it is a T (see remove).
func take[T any](h int64) (T, error) {
	obj, err := handles.remove(h, func(o any) bool { _, ok := o.(T); return ok })
	t, _ := obj.(T)
	return t, err
}

// handleError is a bad handle: an argument error (FFCV_ERR_ARGUMENT).
type handleError string

func (e handleError) Error() string   { return string(e) }
func (handleError) Is(err error) bool { return err == errArgument }
