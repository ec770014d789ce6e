package webdataset

import (
	"bytes"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the shard reader: it must give
// samples and then io.EOF or an error, never panic or loop, and every
// sample must hold members with a key and an extension.
func FuzzReader(f *testing.F) {
	f.Add(makeTar(f, []entry{{"000.jpg", "J0", 0}, {"000.txt", "T0", 0}, {"001.jpg", "J1", 0}}))
	f.Add(gz(f, makeTar(f, []entry{{"a.b.c", "x", 0}, {"a.b.d", "y", 0}})))
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			return
		}
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
