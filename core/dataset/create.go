package dataset

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/ffcv-go/ffcv-go/core/remote"
)

// Dest is where a .beton is written: a local path as itself, or, for an
// s3:// URL, a local temporary file uploaded to S3 as one multipart upload
// that is completed only when the write succeeded.
type Dest struct {
	path string // where the writer writes
	up   *remote.Upload
	dir  string // the temporary directory holding path, for an upload
}

// Create prepares dest for writing. For an s3:// URL it starts the upload
// first, so a missing bucket or bad credentials fail before any conversion
// work. http(s):// URLs are read-only.
func Create(dest string, opts Options) (*Dest, error) {
	if !remote.IsURL(dest) {
		return &Dest{path: dest}, nil
	}
	_, key, err := remote.ParseS3(dest)
	if err != nil {
		return nil, fmt.Errorf("%w (only s3:// URLs can be written; http(s):// is read-only)", err)
	}
	ro, err := opts.remoteOptions()
	if err != nil {
		return nil, err
	}
	u, err := remote.BeginUpload(context.Background(), dest, ro)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ffcv_go-upload-")
	if err != nil {
		u.Abort()
		return nil, fmt.Errorf("%s: local temporary file: %w", u.URL(), err)
	}
	return &Dest{path: filepath.Join(dir, path.Base(key)), up: u, dir: dir}, nil
}

// Path is the local file to write.
func (d *Dest) Path() string { return d.path }

// Finish ends the write: with writeErr nil it uploads the written file (a
// local path needs nothing more), otherwise it abandons the upload and
// returns writeErr.
func (d *Dest) Finish(writeErr error) error {
	if d.up == nil {
		return writeErr
	}
	defer os.RemoveAll(d.dir)
	if writeErr != nil {
		d.up.Abort()
		return writeErr
	}
	return d.up.Complete(context.Background(), d.path)
}

// Abort abandons the write: no object appears. The caller removes a local
// file it started.
func (d *Dest) Abort() {
	if d.up != nil {
		d.up.Abort()
		os.RemoveAll(d.dir)
	}
}

// Write runs write on the local path of dest (see Create) and finishes it.
func Write(dest string, opts Options, write func(path string) error) error {
	d, err := Create(dest, opts)
	if err != nil {
		return err
	}
	return d.Finish(write(d.Path()))
}
