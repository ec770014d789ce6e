package procs

import (
	"os"
	"runtime"
	"testing"
)

func TestWant(t *testing.T) {
	for _, c := range []struct{ cpus, busy, want int }{
		{2, 0, 2},
		{2, 1, 2},
		{2, 2, 3},
		{2, 8, 9},
		{16, 2, 16},
		{16, 16, 17},
	} {
		if got := Want(c.cpus, c.busy); got != c.want {
			t.Errorf("Want(%d, %d) = %d, want %d", c.cpus, c.busy, got, c.want)
		}
	}
}

func TestAdd(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set in the environment: Add leaves it alone")
	}
	n := CPUs()
	steps := []struct {
		add  int
		want int // GOMAXPROCS after the add
	}{
		{n, n + 1},
		{2, n + 3},
		{0, n + 3},
	}
	var dones []func()
	for _, s := range steps {
		dones = append(dones, Add(s.add))
		if got := runtime.GOMAXPROCS(0); got != s.want {
			t.Fatalf("after Add(%d): GOMAXPROCS %d, want %d", s.add, got, s.want)
		}
	}
	dones[1]()
	dones[1]() // a second call must not take the workers back twice
	if got := runtime.GOMAXPROCS(0); got != n+1 {
		t.Fatalf("after one done: GOMAXPROCS %d, want %d", got, n+1)
	}
	dones[0]()
	dones[2]()
	if got := runtime.GOMAXPROCS(0); got != n {
		t.Fatalf("after all done: GOMAXPROCS %d, want %d", got, n)
	}
}
