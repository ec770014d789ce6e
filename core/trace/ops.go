package trace

import "sync"

// OpTotal is the time one operation of a program took and the number of
// samples it ran on.
type OpTotal struct {
	Op string `json:"op"`
	Total
}

// OpTotals sums the time of each operation of one program over the
// workers that run it. Workers add to it through their OpTimes, which hand
// their sums over with their Buffer's, so they do not contend for it. Its
// methods are safe for concurrent use; a nil *OpTotals records nothing.
type OpTotals struct {
	names  []string
	mu     sync.Mutex
	totals []Total
}

// NewOpTotals returns the totals of a program whose operations are named
// names, in order.
func NewOpTotals(names []string) *OpTotals {
	return &OpTotals{names: append([]string(nil), names...), totals: make([]Total, len(names))}
}

// Totals is each operation's time so far, in program order (nil for a nil
// o). Time still in a worker's OpTimes is not in it.
func (o *OpTotals) Totals() []OpTotal {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]OpTotal, len(o.names))
	for i, name := range o.names {
		out[i] = OpTotal{Op: name, Total: o.totals[i]}
	}
	return out
}

// OpTimes is one worker's time per operation not yet handed to the
// programs' OpTotals. It belongs to one goroutine; a nil *OpTimes records
// nothing.
type OpTimes struct {
	pending []opPending
}

// opPending is a worker's sums for one program: a worker runs few
// programs, so a slice searched in order beats a map.
type opPending struct {
	to     *OpTotals
	totals []Total
}

// Add adds d ns to operation op of the program whose totals are o.
func (w *OpTimes) Add(o *OpTotals, op int, d int64) {
	if w == nil || o == nil {
		return
	}
	k := 0
	for k < len(w.pending) && w.pending[k].to != o {
		k++
	}
	if k == len(w.pending) {
		w.pending = append(w.pending, opPending{to: o, totals: make([]Total, len(o.names))})
	}
	t := &w.pending[k].totals[op]
	t.Ns += d
	t.Count++
}

// Flush hands the sums to their OpTotals (a Buffer's Flush calls it).
func (w *OpTimes) Flush() {
	if w == nil {
		return
	}
	for k := range w.pending {
		p := &w.pending[k]
		p.to.mu.Lock()
		for i, t := range p.totals {
			p.to.totals[i].Ns += t.Ns
			p.to.totals[i].Count += t.Count
		}
		p.to.mu.Unlock()
		clear(p.totals)
	}
}
