package main

/*
extern char **environ;
*/
import "C"

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/ffcv-go/ffcv-go/core/remote"
)

// syncEnv copies the process's current AWS_* and FFCV_GO_REMOTE_* variables
// into Go's environment, which Go copied once when the library was loaded:
// credentials or an endpoint set later (os.environ in Python, setenv in C)
// reach only the C environment, where the AWS SDK would not see them.
func syncEnv() {
	relevant := func(kv string) bool {
		return strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "FFCV_GO_REMOTE_")
	}
	var vars []string
	for p := C.environ; p != nil && *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(p))) {
		if kv := C.GoString(*p); relevant(kv) {
			vars = append(vars, kv)
		}
	}
	want := map[string]string{}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); relevant(kv) {
			if _, ok := want[k]; !ok {
				os.Unsetenv(k)
			}
		}
	}
	for k, v := range want {
		if cur, ok := os.LookupEnv(k); !ok || cur != v {
			os.Setenv(k, v)
		}
	}
}

// remoteOptions reads the request settings of s3:// and http(s):// files
// from the environment (FFCV_GO_REMOTE_IN_FLIGHT, _ATTEMPTS, _BACKOFF and
// _TIMEOUT, the last two in seconds); unset ones keep remote's defaults.
func remoteOptions() (remote.Options, error) {
	syncEnv()
	var o remote.Options
	for _, v := range []struct {
		name    string
		seconds *time.Duration
		count   *int
	}{
		{"FFCV_GO_REMOTE_IN_FLIGHT", nil, &o.MaxInFlight},
		{"FFCV_GO_REMOTE_ATTEMPTS", nil, &o.Attempts},
		{"FFCV_GO_REMOTE_BACKOFF", &o.Backoff, nil},
		{"FFCV_GO_REMOTE_TIMEOUT", &o.Timeout, nil},
	} {
		s := os.Getenv(v.name)
		if s == "" {
			continue
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || x <= 0 || (v.count != nil && x != float64(int(x))) {
			return o, fmt.Errorf("%w: %s=%q must be a positive %s", errArgument, v.name, s,
				map[bool]string{true: "integer", false: "number of seconds"}[v.count != nil])
		}
		if v.count != nil {
			*v.count = int(x)
		} else {
			*v.seconds = time.Duration(x * float64(time.Second))
		}
	}
	return o, nil
}

// upload is a .beton written to a local temporary file and then uploaded
// to S3 as one multipart upload, completed only when the write succeeded.
type upload struct {
	u     *remote.Upload
	dir   string
	local string // where the writer writes
}

// beginUpload starts the multipart upload first, so a missing bucket or bad
// credentials fail before any conversion work.
func beginUpload(dest string) (*upload, error) {
	if _, _, err := remote.ParseS3(dest); err != nil {
		return nil, fmt.Errorf("%w: %v (only s3:// URLs can be written; http(s):// is read-only)", errArgument, err)
	}
	opts, err := remoteOptions()
	if err != nil {
		return nil, err
	}
	u, err := remote.BeginUpload(context.Background(), dest, opts)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ffcv_go-upload-")
	if err != nil {
		u.Abort()
		return nil, fmt.Errorf("%s: local temporary file: %w", u.URL(), err)
	}
	_, key, _ := remote.ParseS3(dest)
	return &upload{u: u, dir: dir, local: filepath.Join(dir, path.Base(key))}, nil
}

// finish uploads the written file, or aborts when writing failed (writeErr).
func (up *upload) finish(writeErr error) error {
	defer os.RemoveAll(up.dir)
	if writeErr != nil {
		up.u.Abort()
		return writeErr
	}
	return up.u.Complete(context.Background(), up.local)
}

// abort abandons the upload: no object appears.
func (up *upload) abort() {
	up.u.Abort()
	os.RemoveAll(up.dir)
}

// writeTo runs write on dest, or, for an s3:// dest, on a local temporary
// file that is uploaded when write succeeds.
func writeTo(dest string, write func(path string) error) error {
	if !remote.IsURL(dest) {
		return write(dest)
	}
	up, err := beginUpload(dest)
	if err != nil {
		return err
	}
	return up.finish(write(up.local))
}
