// Package dataset turns what names a dataset (.beton files, directories of
// them, globs, s3:// prefixes and patterns, http(s):// URLs) into one
// beton.Reader, and gives writers a destination that is a local path or an
// s3:// URL (written locally, then uploaded). Callers name data; this
// package decides where it lives and how it is reached.
package dataset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/remote"
)

// ErrArgument is wrapped by errors about what the caller named: no paths,
// or a pattern that cannot be parsed.
var ErrArgument = errors.New("invalid argument")

// Options are the settings of an open or a create.
type Options struct {
	// Custom gives the metadata column layouts of custom fields by name.
	Custom map[string]field.Column
	// Remote tunes requests to s3:// and http(s):// files; nil reads them
	// from the environment (remote.OptionsFromEnv) when a URL is reached.
	Remote *remote.Options
}

// remoteOptions is o.Remote, or the environment's settings.
func (o Options) remoteOptions() (remote.Options, error) {
	if o.Remote != nil {
		return *o.Remote, nil
	}
	return remote.OptionsFromEnv()
}

// Expand turns specs into the files they name, in order: a local directory
// gives its *.beton files and a glob the files it matches, both sorted, and
// so does an s3:// prefix (s3://bucket/dir/) or pattern; anything else (a
// file, a URL) is itself. A missing file is left for the open to report.
func Expand(specs []string, opts Options) ([]string, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("%w: no paths given", ErrArgument)
	}
	var out []string
	for _, s := range specs {
		m, err := expand(s, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

func expand(s string, opts Options) ([]string, error) {
	if remote.IsS3Pattern(s) {
		ro, err := opts.remoteOptions()
		if err != nil {
			return nil, err
		}
		return remote.Glob(context.Background(), s, ro)
	}
	if looksLikeS3Dir(s) {
		// s3://bucket/prefix, as Streaming and litdata users write a
		// directory: its .beton files if it holds any, else an object.
		ro, err := opts.remoteOptions()
		if err != nil {
			return nil, err
		}
		if m, err := remote.Glob(context.Background(), s+"/", ro); err == nil {
			return m, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if strings.Contains(s, "://") {
		return []string{s}, nil // a URL: '?' and '*' are its own (a presigned query)
	}
	st, err := os.Stat(s)
	switch {
	case err == nil && st.IsDir():
		return shardsIn(s)
	case err != nil && strings.ContainsAny(s, "*?["): // an existing file named like a glob is a file
		m, err := filepath.Glob(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrArgument, s, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: %w: the pattern matches no file", s, fs.ErrNotExist)
		}
		sort.Strings(m)
		return m, nil
	}
	return []string{s}, nil
}

// looksLikeS3Dir tells whether s is an s3:// URL whose last part has no
// extension (s3://bucket/data/train): a directory more often than an object.
func looksLikeS3Dir(s string) bool {
	if !strings.HasPrefix(s, "s3://") || remote.IsS3Pattern(s) {
		return false
	}
	_, key, _ := strings.Cut(s[len("s3://"):], "/")
	return key != "" && !strings.Contains(path.Base(key), ".")
}

// shardsIn lists the *.beton files in dir, sorted. (Listing rather than
// globbing keeps a directory whose name has glob characters usable.)
func shardsIn(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var m []string
	for _, e := range entries { // sorted by name
		if strings.HasSuffix(e.Name(), ".beton") {
			m = append(m, filepath.Join(dir, e.Name()))
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%s: %w: the directory holds no .beton files", dir, fs.ErrNotExist)
	}
	return m, nil
}

// Open opens what specs name (see Expand): one file as itself, several as
// shards read as one dataset, sample indices in shard order.
func Open(specs []string, opts Options) (*beton.Reader, error) {
	paths, err := Expand(specs, opts)
	if err != nil {
		return nil, err
	}
	var shards []*beton.Reader
	closeAll := func() {
		for _, r := range shards {
			r.Close()
		}
	}
	for _, p := range paths {
		r, err := OpenFile(p, opts)
		if err != nil {
			closeAll()
			return nil, err
		}
		shards = append(shards, r)
	}
	if len(shards) == 1 {
		return shards[0], nil
	}
	name := fmt.Sprintf("%s (%d shards)", strings.Join(specs, ", "), len(paths))
	if len(specs) > 2 {
		name = fmt.Sprintf("%s … %s (%d shards)", paths[0], paths[len(paths)-1], len(paths))
	}
	r, err := beton.Join(name, shards)
	if err != nil {
		closeAll()
		return nil, err
	}
	return r, nil
}

// OpenFile opens the one .beton file p names: a local file is mapped; an
// s3:// or http(s):// URL is read with range requests (its heap pages only
// through the loader's process cache).
func OpenFile(p string, opts Options) (*beton.Reader, error) {
	if !remote.IsURL(p) {
		return beton.Open(p, opts.Custom)
	}
	ro, err := opts.remoteOptions()
	if err != nil {
		return nil, err
	}
	o, err := remote.Open(context.Background(), p, ro)
	if err != nil {
		return nil, err
	}
	r, err := beton.OpenAt(o.URL(), o, o.Size(), opts.Custom)
	if err != nil {
		o.Close()
		return nil, err
	}
	return r, nil
}
