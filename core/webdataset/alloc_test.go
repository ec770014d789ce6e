package webdataset

import (
	"archive/tar"
	"bytes"
	"errors"
	"runtime"
	"testing"
)

// truncatedClaim is a tar whose only member's header claims size bytes
// but which ends after data.
func truncatedClaim(t testing.TB, size int64, data string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "k0.jpg", Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes() // no Close: the member is cut short
}

// A member's bytes are allocated as they arrive, not from its header: a
// header claiming 4 GiB over 10 bytes of data fails as truncated without
// allocating anywhere near the claim.
func TestMemberAllocatedAsRead(t *testing.T) {
	for _, size := range []int64{MaxMember, 1 << 30, 100} {
		shard := truncatedClaim(t, size, "0123456789")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := NewReader(bytes.NewReader(shard))
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Next()
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("claim of %d bytes: %v, want ErrFormat (truncated)", size, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("claim of %d bytes over 10: %d bytes allocated", size, got)
		}
	}
}
