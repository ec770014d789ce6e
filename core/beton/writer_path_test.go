package beton

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// A file in a folder that does not exist: the error names the folder, not
// the writer's temporary file.
func TestCreateInAMissingFolder(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(missing, "train-00000.beton")
	_, err := CreateAppender(path, shardFields, WriterOptions{PageSize: MinPageSize})
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want a fs.ErrNotExist", err)
	}
	want := "its folder " + missing + " does not exist"
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), ".tmp-") {
		t.Fatalf("err = %v, want %q and no temporary file's name", err, want)
	}
}
