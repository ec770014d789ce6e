// Package procs keeps one Go P idle beside the goroutines that spend their
// time in long C calls (JPEG decode, resize, transcode).
//
// A goroutine in a cgo call keeps its P in the syscall state. When every P is
// held so, the runtime's sysmon thread takes them back after 20 µs and, having
// found work, polls again 20 µs later: tens of thousands of wake-ups a second
// for as long as the workers decode. On our 2-core VM this came and went; when
// it happened it cost the loader a fifth of its CPU time. With an idle P to
// spare, sysmon leaves a P in a C call alone for 10 ms and backs off to
// sleeping 10 ms at a time.
//
// Sysmon also takes the P back from a C call, idle P or not, once its
// goroutine has run 10 ms without a new schedule tick, and goes back to 20 µs
// polls: workers therefore call runtime.Gosched between items.
//
// Raising GOMAXPROCS does not add parallelism: the workers are the only busy
// goroutines and each already has its own thread.
package procs

import (
	"os"
	"runtime"
	"sync"
)

var (
	mu   sync.Mutex
	cpus = runtime.GOMAXPROCS(0)
	// A GOMAXPROCS set in the environment is the user's choice: kept.
	fixed = os.Getenv("GOMAXPROCS") != ""
	busy  int
)

// CPUs is GOMAXPROCS as the process started: the default number of workers.
func CPUs() int { return cpus }

// Add declares n more goroutines that spend most of their time in C calls and
// raises GOMAXPROCS, if needed, to keep one P idle beside them. Call the
// returned function once they have exited; calling it again does nothing.
func Add(n int) (done func()) {
	if fixed || n <= 0 {
		return func() {}
	}
	mu.Lock()
	busy += n
	apply()
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			busy -= n
			apply()
			mu.Unlock()
		})
	}
}

// Want is the GOMAXPROCS for busy C-calling goroutines on cpus CPUs.
func Want(cpus, busy int) int {
	if busy == 0 {
		return cpus
	}
	return max(cpus, busy+1)
}

func apply() {
	if busy == 0 {
		// Back to the runtime's own choice, which follows CPU limits.
		runtime.SetDefaultGOMAXPROCS()
		return
	}
	if want := Want(cpus, busy); runtime.GOMAXPROCS(0) != want {
		runtime.GOMAXPROCS(want)
	}
}
