package dataset

import (
	"bytes"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/internal/s3test"
	"github.com/ffcv-go/ffcv-go/core/remote"
)

func TestMain(m *testing.M) { s3test.Main(m) }

// The FFCV-written fixture: 257 samples of (label: int, value: float).
var scalars = filepath.Join("..", "..", "tests", "fixtures", "ffcv-1.0", "scalars.beton")

// fast keeps retries of failures the tests provoke short.
var fast = &remote.Options{Attempts: 2, Backoff: time.Millisecond, Timeout: 10 * time.Second}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// s3Bucket starts moto, points the AWS chain at it and makes bucket with
// objects under it (each holding the fixture's bytes); it returns the
// server's URL.
func s3Bucket(t *testing.T, bucket string, keys ...string) string {
	t.Helper()
	endpoint := s3test.Start(t)
	s3test.Env(t, endpoint)
	s3test.Put(t, endpoint, bucket, "", nil)
	for _, k := range keys {
		s3test.Put(t, endpoint, bucket, k, readFile(t, scalars))
	}
	return endpoint
}

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b-1.beton", "a-2.beton", "a-1.beton", "notes.txt", "odd[1].beton"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"empty", "glob[x]"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "glob[x]", "s.beton"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(names ...string) []string {
		for k, n := range names {
			names[k] = filepath.Join(dir, n)
		}
		return names
	}
	cases := []struct {
		name  string
		specs []string
		want  []string
		err   error
	}{
		{"directory, sorted", at(""), at("a-1.beton", "a-2.beton", "b-1.beton", "odd[1].beton"), nil},
		{"directory named like a glob", at("glob[x]"), at("glob[x]/s.beton"), nil},
		{"glob, sorted", at("a-*.beton"), at("a-1.beton", "a-2.beton"), nil},
		{"list kept in order", at("b-1.beton", "a-1.beton"), at("b-1.beton", "a-1.beton"), nil},
		{"several specs concatenated", append(at("b-*.beton"), at("a-*.beton")...), at("b-1.beton", "a-1.beton", "a-2.beton"), nil},
		{"a file named like a glob", at("odd[1].beton"), at("odd[1].beton"), nil},
		{"missing file: left to open", at("gone.beton"), at("gone.beton"), nil},
		{"URL untouched", []string{"https://host/x.beton?sig=a*b"}, []string{"https://host/x.beton?sig=a*b"}, nil},
		{"s3 key untouched", []string{"s3://bucket/x.beton"}, []string{"s3://bucket/x.beton"}, nil},
		{"glob matching nothing", at("c-*.beton"), nil, fs.ErrNotExist},
		{"directory without shards", at("empty"), nil, fs.ErrNotExist},
		{"bad pattern", at("[.beton"), nil, ErrArgument},
		{"nothing", nil, nil, ErrArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Expand(c.specs, Options{})
			if !errors.Is(err, c.err) || (c.err == nil && !slices.Equal(got, c.want)) {
				t.Fatalf("got %q, %v; want %q, %v", got, err, c.want, c.err)
			}
		})
	}
}

func TestExpandS3(t *testing.T) {
	s3Bucket(t, "expand", "shards/a-0.beton", "shards/a-1.beton", "shards/b-0.beton", "shards/notes.txt")
	cases := []struct {
		name  string
		specs []string
		env   string // FFCV_GO_REMOTE_ATTEMPTS, with opts nil
		opts  *remote.Options
		want  string
		err   error
	}{
		{"prefix", []string{"s3://expand/shards/"}, "", fast, "a-0 a-1 b-0", nil},
		{"prefix without its slash", []string{"s3://expand/shards"}, "", fast, "a-0 a-1 b-0", nil},
		{"extensionless object", []string{"s3://expand/shards/notes"}, "", fast, "notes", nil},
		{"pattern", []string{"s3://expand/shards/a-*.beton"}, "", fast, "a-0 a-1", nil},
		{"settings from the environment", []string{"s3://expand/shards/b-*"}, "3", nil, "b-0", nil},
		{"bad setting in the environment", []string{"s3://expand/shards/"}, "x", nil, "", remote.ErrBadEnv},
		{"no match", []string{"s3://expand/shards/z*"}, "", fast, "", fs.ErrNotExist},
		{"no bucket", []string{"s3://no-such-bucket/x/"}, "", fast, "", fs.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("FFCV_GO_REMOTE_ATTEMPTS", c.env)
			got, err := Expand(c.specs, Options{Remote: c.opts})
			var names []string
			for _, u := range got {
				names = append(names, strings.TrimSuffix(strings.TrimPrefix(u, "s3://expand/shards/"), ".beton"))
			}
			if !errors.Is(err, c.err) || strings.Join(names, " ") != c.want {
				t.Fatalf("got %q, %v; want %s, %v", got, err, c.want, c.err)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	data := readFile(t, scalars)
	for _, n := range []string{"shards/a.beton", "shards/b.beton", "shards/c.beton"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(n)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.beton"), []byte("not a beton"), 0o644); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer web.Close()
	s3Bucket(t, "open", "one.beton", "set/a.beton", "set/b.beton")
	cases := []struct {
		name    string
		specs   []string
		samples uint64 // 0: an error wrapping err
		shards  int    // joined shards; 0 for one file
		mapped  bool
		err     error
	}{
		{"one file", []string{scalars}, 257, 0, true, nil},
		{"a directory of shards", []string{filepath.Join(dir, "shards")}, 3 * 257, 3, true, nil},
		{"a glob and a file", []string{filepath.Join(dir, "shards", "[ab].beton"), scalars}, 3 * 257, 3, true, nil},
		{"over HTTP", []string{web.URL + "/shards/a.beton"}, 257, 0, false, nil},
		{"on S3", []string{"s3://open/one.beton"}, 257, 0, false, nil},
		{"S3 shards", []string{"s3://open/set/"}, 2 * 257, 2, false, nil},
		{"missing file", []string{filepath.Join(dir, "gone.beton")}, 0, 0, false, fs.ErrNotExist},
		{"not a beton", []string{filepath.Join(dir, "junk.beton")}, 0, 0, false, beton.ErrFormat},
		{"one good shard, one bad", []string{scalars, filepath.Join(dir, "junk.beton")}, 0, 0, false, beton.ErrFormat},
		{"missing S3 object", []string{"s3://open/gone.beton"}, 0, 0, false, fs.ErrNotExist},
		{"missing HTTP object", []string{web.URL + "/gone.beton"}, 0, 0, false, fs.ErrNotExist},
		{"not a URL scheme we read", []string{"ftp://host/x.beton"}, 0, 0, false, fs.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Open(c.specs, Options{Remote: fast})
			if c.samples == 0 {
				if err == nil {
					r.Close()
				}
				if !errors.Is(err, c.err) {
					t.Fatalf("got %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.NumSamples() != c.samples || len(r.Shards()) != c.shards || r.Mapped() != c.mapped {
				t.Fatalf("%d samples, %d shards, mapped %v; want %d, %d, %v",
					r.NumSamples(), len(r.Shards()), r.Mapped(), c.samples, c.shards, c.mapped)
			}
			if _, _, err := r.Read(c.samples-1, 0); err != nil {
				t.Fatalf("last sample: %v", err)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	endpoint := s3Bucket(t, "create")
	want := readFile(t, scalars)
	dir := t.TempDir()
	errWrite := errors.New("the writer failed")
	cases := []struct {
		name     string
		dest     string
		env      string // FFCV_GO_REMOTE_TIMEOUT, with opts nil
		opts     *remote.Options
		writeErr error
		err      error // from Write
		stored   bool  // the file is at s3://create/key afterwards
	}{
		{"local file", filepath.Join(dir, "out.beton"), "", fast, nil, nil, false},
		{"upload", "s3://create/dir/out.beton", "", fast, nil, nil, true},
		{"upload with settings from the environment", "s3://create/env.beton", "30", nil, nil, nil, true},
		{"failed write: nothing uploaded", "s3://create/failed.beton", "", fast, errWrite, errWrite, false},
		{"failed write: local", filepath.Join(dir, "failed.beton"), "", fast, errWrite, errWrite, false},
		{"bad setting in the environment", "s3://create/bad-env.beton", "-1", nil, nil, remote.ErrBadEnv, false},
		{"HTTP is read-only", "https://host/out.beton", "", fast, nil, remote.ErrBadURL, false},
		{"S3 URL without a key", "s3://create", "", fast, nil, remote.ErrBadURL, false},
		{"missing bucket: fails before writing", "s3://no-such-bucket/out.beton", "", fast, nil, fs.ErrNotExist, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("FFCV_GO_REMOTE_TIMEOUT", c.env)
			var wrote string
			err := Write(c.dest, Options{Remote: c.opts}, func(p string) error {
				wrote = p
				if err := os.WriteFile(p, want, 0o644); err != nil {
					return err
				}
				return c.writeErr
			})
			if !errors.Is(err, c.err) {
				t.Fatalf("got %v, want %v", err, c.err)
			}
			if c.err != nil && c.writeErr == nil && wrote != "" {
				t.Fatalf("wrote %s though the destination could not be created", wrote)
			}
			if !remote.IsURL(c.dest) {
				if wrote != c.dest {
					t.Fatalf("wrote %s, not %s", wrote, c.dest)
				}
				return
			}
			if wrote != "" {
				if _, err := os.Stat(filepath.Dir(wrote)); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("temporary directory of %s left behind (%v)", wrote, err)
				}
			}
			key, ok := strings.CutPrefix(c.dest, "s3://create/")
			if !ok {
				return
			}
			got, err := s3test.Get(endpoint, "create", key)
			if !c.stored {
				if err == nil {
					t.Fatalf("an object appeared at %s", c.dest)
				}
				return
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %v, or its %d bytes differ from the %d written", c.dest, err, len(got), len(want))
			}
		})
	}
}

func TestDestAbort(t *testing.T) {
	endpoint := s3Bucket(t, "abort")
	d, err := Create("s3://abort/out.beton", Options{Remote: fast})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.Path(), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.Abort()
	if _, err := os.Stat(filepath.Dir(d.Path())); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("temporary directory left behind (%v)", err)
	}
	if _, err := s3test.Get(endpoint, "abort", "out.beton"); err == nil {
		t.Fatal("an aborted upload left an object")
	}
}
