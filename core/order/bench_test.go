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
