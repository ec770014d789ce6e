package order

import "testing"

const benchN = 10_000_000

func BenchmarkRandom10M(b *testing.B) {
	in := makeIndices("range", benchN)
	for b.Loop() {
		Random(in, 42)
	}
}

func BenchmarkQuasiRandom10M(b *testing.B) {
	in := makeIndices("range", benchN)
	pageOf := perPage(100)
	for b.Loop() {
		QuasiRandom(in, pageOf, 1024, 42)
	}
}

// What an elastic resume adds to a load: the rest of a 10M-sample epoch
// after a run at world 8 (then cut for one rank), and the fingerprint a
// state_dict computes once per epoch.
func BenchmarkElasticResume10M(b *testing.B) {
	global := Random(makeIndices("range", benchN), 42)
	stages := []Stage{{Blocked, 8, 256, true, 2000}}
	for b.Loop() {
		rest, err := Remaining(global, stages)
		if err != nil {
			b.Fatal(err)
		}
		Resume(rest, 3, 6, 256, true)
	}
}

func BenchmarkFingerprint10M(b *testing.B) {
	global := makeIndices("range", benchN)
	for b.Loop() {
		Fingerprint(global)
	}
}
