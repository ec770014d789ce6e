package webdataset

import (
	"bytes"
	"io"
	"runtime"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the shard reader: it must give
// samples and then io.EOF or an error, never panic or loop; every sample
// must hold members with a key and an extension; and what it allocates is
// bounded by the bytes it read (a header's size claims nothing).
func FuzzReader(f *testing.F) {
	f.Add(makeTar(f, []entry{{"000.jpg", "J0", 0}, {"000.txt", "T0", 0}, {"001.jpg", "J1", 0}}))
	f.Add(gz(f, makeTar(f, []entry{{"a.b.c", "x", 0}, {"a.b.d", "y", 0}})))
	f.Add([]byte("not a tar"))
	f.Add(truncatedClaim(f, MaxMember, "0123456789"))
	f.Add(gz(f, truncatedClaim(f, 1<<30, "x")))
	f.Fuzz(func(t *testing.T, b []byte) {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		// Deflate expands at most ~1032x; a buffer grows to at most twice
		// what arrived; the readers' own buffers are a few hundred KiB.
		bound := 2*1032*uint64(len(b)) + 16<<20
		defer func() {
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if got := after.TotalAlloc - before.TotalAlloc; got > bound {
				t.Fatalf("%d bytes allocated reading %d", got, len(b))
			}
		}()
		for n := 0; ; n++ {
			s, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an error without a message")
				}
				return
			}
			if s.Key == "" || len(s.Members) == 0 {
				t.Fatalf("sample %d: key %q, %d members", n, s.Key, len(s.Members))
			}
			for _, m := range s.Members {
				if cap(m.Data) > max(2*len(m.Data), firstChunk) {
					t.Fatalf("member %q: %d bytes in a buffer of %d", m.Name, len(m.Data), cap(m.Data))
				}
				if m.Ext == "" {
					t.Fatalf("member %q without an extension", m.Name)
				}
			}
			if n > len(b) {
				t.Fatal("more samples than bytes")
			}
		}
	})
}
