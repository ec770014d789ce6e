package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestExpandPaths(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b-1.beton", "a-2.beton", "a-1.beton", "notes.txt", "odd[1].beton"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
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
		{"glob, sorted", at("a-*.beton"), at("a-1.beton", "a-2.beton"), nil},
		{"list kept in order", at("b-1.beton", "a-1.beton"), at("b-1.beton", "a-1.beton"), nil},
		{"a file named like a glob", at("odd[1].beton"), at("odd[1].beton"), nil},
		{"missing file: left to open", at("gone.beton"), at("gone.beton"), nil},
		{"URL untouched", []string{"https://host/x.beton?sig=a*b"}, []string{"https://host/x.beton?sig=a*b"}, nil},
		{"glob matching nothing", at("c-*.beton"), nil, fs.ErrNotExist},
		{"directory without shards", at("empty"), nil, fs.ErrNotExist},
		{"bad pattern", at("[.beton"), nil, errArgument},
		{"nothing", nil, nil, errArgument},
	}
	for _, c := range cases {
		got, err := expandPaths(c.specs)
		if !errors.Is(err, c.err) || (c.err == nil && !slices.Equal(got, c.want)) {
			t.Errorf("%s: got %q, %v; want %q, %v", c.name, got, err, c.want, c.err)
		}
	}
}
