package webdataset

import (
	"archive/tar"
	"bytes"
	"errors"
	"runtime"
	"strings"
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

// Damage names the sample it cost and the member it is in (or, between
// members, the last member read before it); damage before any sample
// costs none.
func TestDamageNamesSampleAndMember(t *testing.T) {
	good := makeTar(t, []entry{{"000.jpg", strings.Repeat("a", 3000), 0}, {"000.txt", "T0", 0},
		{"001.jpg", strings.Repeat("b", 3000), 0}, {"001.txt", "T1", 0}})
	at := bytes.Index(good, []byte("001.jpg"))
	corrupt := bytes.Clone(good)
	copy(corrupt[at+148:], "zzzzzzzz")
	for _, tc := range []struct {
		name        string
		shard       []byte
		key, member string
	}{
		{"truncated in a member", good[:at+512+1000], "001", "001.jpg"},
		{"truncated in a header", good[:at+100], "000", "000.txt"},
		{"truncated between members", good[:at], "000", "000.txt"},
		{"corrupt header", corrupt, "000", "000.txt"},
		{"not a tar", bytes.Repeat([]byte("hello world "), 100), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := summary(t, tc.shard)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if e.Key != tc.key || e.Member != tc.member {
				t.Fatalf("damage in sample %q, member %q; want %q, %q (%v)", e.Key, e.Member, tc.key, tc.member, err)
			}
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want ErrFormat", err)
			}
		})
	}
}
