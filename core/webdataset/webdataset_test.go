package webdataset

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

type entry struct {
	name string
	data string
	kind byte // tar.TypeReg when 0
}

func makeTar(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		kind := e.kind
		if kind == 0 {
			kind = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: kind}
		if kind != tar.TypeReg {
			h.Size = 0
		}
		if kind == tar.TypeSymlink {
			h.Linkname = "elsewhere"
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if kind == tar.TypeReg {
			if _, err := tw.Write([]byte(e.data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gz(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// summary is a shard's samples as "key: ext=data ext=data [dup ext]".
func summary(t testing.TB, shard []byte) ([]string, error) {
	r, err := NewReader(bytes.NewReader(shard))
	if err != nil {
		return nil, err
	}
	var out []string
	for {
		s, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		var parts []string
		for _, m := range s.Members {
			parts = append(parts, m.Ext+"="+string(m.Data))
		}
		for _, m := range s.Duplicates {
			parts = append(parts, "dup "+m.Name)
		}
		out = append(out, s.Key+": "+strings.Join(parts, " "))
	}
}

func TestSamples(t *testing.T) {
	plain := []entry{
		{"000.jpg", "J0", 0}, {"000.txt", "T0", 0},
		{"001.JPG", "J1", 0}, {"001.txt", "T1", 0}, {"001.seg.png", "S1", 0},
		{"dir.x/002.jpg", "J2", 0},
	}
	for _, tc := range []struct {
		name  string
		shard []byte
		want  []string
	}{
		{"grouped by key", makeTar(t, plain),
			[]string{"000: jpg=J0 txt=T0", "001: jpg=J1 txt=T1 seg.png=S1", "dir.x/002: jpg=J2"}},
		{"gzipped", gz(t, makeTar(t, plain)),
			[]string{"000: jpg=J0 txt=T0", "001: jpg=J1 txt=T1 seg.png=S1", "dir.x/002: jpg=J2"}},
		{"skipped entries", makeTar(t, []entry{
			{"__key__", "x", 0}, {"__meta__/a.json", "m", 0}, {"d", "", tar.TypeDir}, {"a.lnk", "", tar.TypeSymlink},
			{"noext", "n", 0}, {".hidden", "h", 0}, {"a.jpg", "A", 0}, {"__a__b.txt", "k", 0},
		}), []string{"a: jpg=A", "__a__b: txt=k"}},
		{"a key seen again later is a new sample", makeTar(t, []entry{{"a.jpg", "1", 0}, {"b.jpg", "2", 0}, {"a.txt", "3", 0}}),
			[]string{"a: jpg=1", "b: jpg=2", "a: txt=3"}},
		{"duplicates kept aside", makeTar(t, []entry{{"a.jpg", "1", 0}, {"a.JPG", "2", 0}, {"a.txt", "3", 0}}),
			[]string{"a: jpg=1 txt=3 dup a.JPG"}},
		{"empty tar", makeTar(t, nil), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := summary(t, tc.shard)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A damaged shard ends with an error that says what is wrong and where,
// after the samples before the damage.
func TestDamagedShards(t *testing.T) {
	good := makeTar(t, []entry{{"000.jpg", strings.Repeat("a", 3000), 0}, {"000.txt", "T0", 0},
		{"001.jpg", strings.Repeat("b", 3000), 0}, {"001.txt", "T1", 0}})
	at := bytes.Index(good, []byte("001.jpg")) // its header
	corrupt := bytes.Clone(good)
	copy(corrupt[at+148:], "zzzzzzzz") // the header's checksum
	gzipped := gz(t, good)
	end := len(good) - 1024 // before the end-of-archive blocks
	for end > 0 && good[end-1] == 0 {
		end--
	}
	end = (end + 511) / 512 * 512
	for _, tc := range []struct {
		name    string
		shard   []byte
		samples int
		want    string
	}{
		{"truncated in a member", good[:at+512+1000], 1, `sample "001", member "001.jpg": not a readable tar file`},
		{"truncated in a header", good[:at+100], 0, `sample "000", after member "000.txt"`},
		// Cut at a member's boundary: the sample being read may have lost members.
		{"truncated between members", good[:at], 0, `sample "000", after member "000.txt": not a readable tar file: no end-of-archive`},
		{"truncated after the last member", good[:end], 1, `sample "001", after member "001.txt": not a readable tar file: no end-of-archive`},
		{"corrupt header", corrupt, 0, `sample "000", after member "000.txt"`},
		{"truncated gzip", gzipped[:len(gzipped)/2], 0, "at the start"},
		{"not a tar", bytes.Repeat([]byte("hello world "), 100), 0, "at the start"},
		{"empty file", nil, 0, "empty file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := summary(t, tc.shard)
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("err = %v, want ErrFormat", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to name %s", err, tc.want)
			}
			if len(got) != tc.samples {
				t.Fatalf("%d samples before the damage, want %d", len(got), tc.samples)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct{ name, key, ext string }{
		{"a.jpg", "a", "jpg"},
		{"a.b.C", "a", "b.c"},
		{"dir/sub.x/0001.json", "dir/sub.x/0001", "json"},
		{"__a__b.txt", "__a__b", "txt"},
		{"noext", "", ""},
		{"000.", "", ""},
		{"dir/a.", "", ""},
		{".hidden", "", ""},
		{"dir/.hidden", "", ""},
		{"__key__", "", ""},
		{"__meta__/x.json", "", ""},
	} {
		key, ext, ok := Split(tc.name)
		if ok != (tc.key != "") || key != tc.key || ext != tc.ext {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q", tc.name, key, ext, ok, tc.key, tc.ext)
		}
	}
}

type failingAt struct {
	data []byte
	at   int64
}

func (f *failingAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.at {
		return 0, errors.New("connection reset")
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *failingAt) Close() error { return nil }

// The sequential reader of remote shards hands over every byte in order,
// chunk by chunk, and a failed range read as an error.
func TestSequential(t *testing.T) {
	data := make([]byte, 10_000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, chunk := range []int64{1, 333, 4096, 10_000, 20_000} {
		s := newSequential(&failingAt{data: data, at: 1 << 30}, int64(len(data)), chunk)
		got, err := io.ReadAll(s)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("chunk %d: %d bytes, %v", chunk, len(got), err)
		}
		s.Close()
	}
	s := newSequential(&failingAt{data: data, at: 5000}, int64(len(data)), 1000)
	got, err := io.ReadAll(s)
	if err == nil || !strings.Contains(err.Error(), "connection reset") || len(got) != 5000 {
		t.Fatalf("%d bytes, err %v", len(got), err)
	}
	s.Close()
	// Closed before the end: the read-ahead goroutine ends.
	s = newSequential(&failingAt{data: data, at: 1 << 30}, int64(len(data)), 10)
	s.Read(make([]byte, 5))
	s.Close()
}
