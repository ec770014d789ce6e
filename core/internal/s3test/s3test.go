// Package s3test runs moto, a real S3-compatible server, on 127.0.0.1 for
// the tests of the packages that read and write S3. Tests only: nothing in
// the library imports it.
package s3test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// server is the one moto server of a test binary, stopped by Main.
var server struct {
	once sync.Once
	cmd  *exec.Cmd
	url  string
	err  error
}

// Main runs a package's tests and stops the server if one was started:
// call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if server.cmd != nil {
		server.cmd.Process.Kill()
		server.cmd.Wait()
	}
	os.Exit(code)
}

// Start returns the server's URL, starting it on first use. It skips the
// test when the repository's .venv (made by `make venv`, before `make test`
// runs the Go tests) has no moto_server.
func Start(t testing.TB) string {
	t.Helper()
	bin := ""
	for dir, _ := os.Getwd(); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			bin = filepath.Join(dir, ".venv", "bin", "moto_server")
			break
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	if _, err := os.Stat(bin); bin == "" || err != nil {
		t.Skip("no .venv/bin/moto_server (make venv installs moto[server])")
	}
	server.once.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			server.err = err
			return
		}
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		server.cmd = exec.Command(bin, "-H", "127.0.0.1", "-p", port)
		if server.err = server.cmd.Start(); server.err != nil {
			server.cmd = nil
			return
		}
		server.url = "http://127.0.0.1:" + port
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if resp, err := http.Get(server.url + "/moto-api/data.json"); err == nil {
				resp.Body.Close()
				return
			}
		}
		server.err = errors.New("moto_server did not answer within 60 s")
	})
	if server.err != nil {
		t.Fatal(server.err)
	}
	return server.url
}

// Env points the standard AWS chain at endpoint with test credentials,
// away from the user's own configuration and the instance metadata service,
// for the rest of the test.
func Env(t testing.TB, endpoint string) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint, "AWS_ENDPOINT_URL_S3": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k)
		}
	}
}

// Put stores data at bucket/key on the server at endpoint, making the
// bucket if needed. moto takes unsigned path-style requests, so this needs
// no client of the code under test.
func Put(t testing.TB, endpoint, bucket, key string, data []byte) {
	t.Helper()
	if _, err := do(http.MethodPut, endpoint+"/"+bucket, nil); err != nil && !errors.Is(err, errExists) {
		t.Fatal(err)
	}
	if key == "" {
		return
	}
	if _, err := do(http.MethodPut, endpoint+"/"+bucket+"/"+key, data); err != nil {
		t.Fatal(err)
	}
}

// Get reads bucket/key from the server at endpoint; a missing object is an
// error wrapping os.ErrNotExist.
func Get(endpoint, bucket, key string) ([]byte, error) {
	return do(http.MethodGet, endpoint+"/"+bucket+"/"+key, nil)
}

// errExists is a bucket made before (HTTP 409).
var errExists = errors.New("already exists")

func do(method, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("%s %s: %w", method, url, os.ErrNotExist)
	case resp.StatusCode == http.StatusConflict:
		return nil, fmt.Errorf("%s %s: %w", method, url, errExists)
	case resp.StatusCode >= 300:
		return nil, fmt.Errorf("%s %s: HTTP %d: %s", method, url, resp.StatusCode, b)
	}
	return b, nil
}
