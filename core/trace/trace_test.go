package trace

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseMode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Mode
		bad  bool
	}{
		{"", Off, false}, {"off", Off, false}, {"stages", Stages, false}, {"events", Events, false},
		{"on", Off, true}, {"Events", Off, true},
	} {
		got, err := ParseMode(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestStageNames(t *testing.T) {
	for s, want := range map[Stage]string{Read: "read", Entropy: "entropy_decode", Decode: "idct_resize",
		Ops: "ops", PageRead: "page_read", BatchOps: "batch_ops", NumStages: "stage6", -1: "stage-1"} {
		if s.String() != want {
			t.Errorf("Stage(%d) = %q, want %q", s, s.String(), want)
		}
	}
}

// A nil Recorder (tracing off) and its nil Buffer accept every call.
func TestNilRecorder(t *testing.T) {
	r := New(Off, 0)
	if r != nil {
		t.Fatal("New(Off) is not nil")
	}
	b := r.Buffer(0)
	if b != nil {
		t.Fatal("a nil Recorder's Buffer is not nil")
	}
	b.Flush()
	r.Add(Event{Stage: PageRead, Dur: 5})
	if r.Mode() != Off || r.Totals() != nil || r.Pending() != 0 || r.Dropped() != 0 || r.Drain(make([]Event, 4)) != 0 {
		t.Fatal("a nil Recorder recorded something")
	}
}

func TestNowIsMonotonicClock(t *testing.T) {
	r := New(Stages, 0)
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Skip(err)
	}
	before := ts.Nano()
	now := r.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	// Go reads the same clock: Now is off by at most about half a system
	// call (the base's reading), far less than another clock would be;
	// 100 µs leaves room for a loaded machine.
	if now < before-100_000 || now > ts.Nano()+100_000 {
		t.Fatalf("Now %d not within CLOCK_MONOTONIC [%d, %d]", now, before, ts.Nano())
	}
}

func TestBufferSample(t *testing.T) {
	for _, c := range []struct {
		name      string
		mode      Mode
		times     Times
		wantSpans []Event // of one sample started at 1000, track 3, id 7
	}{
		{"every stage", Events, Times{Read: 10, Entropy: 20, Decode: 30, Ops: 40}, []Event{
			{1000, 10, 7, 3, Read}, {1010, 20, 7, 3, Entropy}, {1030, 30, 7, 3, Decode}, {1060, 40, 7, 3, Ops}}},
		{"raw image: no entropy, no ops", Events, Times{Read: 5, Decode: 50}, []Event{
			{1000, 5, 7, 3, Read}, {1005, 50, 7, 3, Decode}}},
		{"stages mode keeps no spans", Stages, Times{Read: 10, Entropy: 20, Decode: 30, Ops: 40}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := New(c.mode, 0)
			b := r.Buffer(3)
			b.Sample(7, 1000, &c.times)
			if r.Pending() != 0 || len(r.Totals()) != 0 {
				t.Fatal("a sample reached the Recorder before Flush")
			}
			b.Flush()
			got := make([]Event, 8)
			got = got[:r.Drain(got)]
			if len(got) != len(c.wantSpans) {
				t.Fatalf("spans %v, want %v", got, c.wantSpans)
			}
			for i := range got {
				if got[i] != c.wantSpans[i] {
					t.Errorf("span %d = %+v, want %+v", i, got[i], c.wantSpans[i])
				}
			}
			tot := r.Totals()
			for s := Read; s <= Ops; s++ {
				want := Total{}
				if c.times[s] > 0 {
					want = Total{c.times[s], 1}
				}
				if tot[s.String()] != want {
					t.Errorf("total of %v = %+v, want %+v", s, tot[s.String()], want)
				}
			}
		})
	}
}

func TestBufferFlushesAndDrainBounds(t *testing.T) {
	r := New(Events, 600)
	b := r.Buffer(0)
	tm := Times{Read: 1, Decode: 2} // 2 spans a sample
	for i := 0; i < flushEvery-1; i++ {
		b.Sample(uint64(i), int64(i*10), &tm)
	}
	if r.Pending() != 0 {
		t.Fatalf("%d spans handed over before %d samples", r.Pending(), flushEvery)
	}
	b.Sample(flushEvery-1, 0, &tm)
	if r.Pending() != 2*flushEvery {
		t.Fatalf("after %d samples %d spans pending, want %d", flushEvery, r.Pending(), 2*flushEvery)
	}
	// 100 more samples: 200 spans, of which 600-512 = 88 fit.
	for i := 0; i < 100; i++ {
		b.Sample(uint64(i), 0, &tm)
	}
	b.Flush()
	if r.Pending() != 600 || r.Dropped() != 112 {
		t.Fatalf("pending %d, dropped %d; want 600, 112", r.Pending(), r.Dropped())
	}
	if tot := r.Totals()["read"]; tot.Count != flushEvery+100 {
		t.Fatalf("read total %+v counts dropped spans out", tot)
	}
	dst := make([]Event, 250)
	if n := r.Drain(dst); n != 250 || dst[0].Arg != 0 || dst[1].Stage != Decode {
		t.Fatalf("Drain took %d, first %+v %+v", n, dst[0], dst[1])
	}
	if n := r.Drain(make([]Event, 1000)); n != 350 || r.Pending() != 0 {
		t.Fatalf("second Drain took %d, %d left", n, r.Pending())
	}
	r.Add(Event{Start: 5, Dur: 9, Arg: 2, Track: TrackPages, Stage: PageRead})
	if r.Pending() != 1 || r.Totals()["page_read"] != (Total{9, 1}) {
		t.Fatalf("Add: pending %d, totals %v", r.Pending(), r.Totals())
	}
}
