package remote

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if moto.cmd != nil {
		moto.cmd.Process.Kill()
		moto.cmd.Wait()
	}
	os.Exit(code)
}

// blob is deterministic test content.
func blob(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// serveBytes is a real range-capable HTTP server (net/http's ServeContent)
// for data, with an ETag so If-Match is exercised.
func serveBytes(data *atomic.Pointer[[]byte]) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := *data.Load()
		w.Header().Set("ETag", `"`+strconv.Itoa(len(d))+"-"+strconv.Itoa(int(d[0]))+`"`)
		http.ServeContent(w, r, "data.beton", time.Time{}, bytes.NewReader(d))
	})
}

// flaky sabotages a share of the responses of next: a 503 (with S3's
// SlowDown body), a body cut short (the connection dropped mid-response), or
// a stall longer than the client's timeout. It counts what it did.
type flaky struct {
	next  http.Handler
	rate  float64 // share of responses sabotaged
	stall time.Duration
	mu    sync.Mutex
	rng   *rand.Rand
	n     [4]atomic.Int64 // served, failed, cut, stalled
	all   bool            // sabotage every response with a 503
}

func newFlaky(next http.Handler, rate float64, stall time.Duration) *flaky {
	return &flaky{next: next, rate: rate, stall: stall, rng: rand.New(rand.NewPCG(7, 7))}
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	x, kind := f.rng.Float64(), f.rng.IntN(3)
	f.mu.Unlock()
	if f.all {
		x, kind = 0, 0
	}
	if x >= f.rate {
		f.n[0].Add(1)
		f.next.ServeHTTP(w, r)
		return
	}
	f.n[1+kind].Add(1)
	switch kind {
	case 0:
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
	case 1:
		rec := httptest.NewRecorder()
		f.next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body[:len(body)/2])
		panic(http.ErrAbortHandler) // drops the connection
	case 2:
		select {
		case <-time.After(f.stall):
		case <-r.Context().Done():
		}
		f.next.ServeHTTP(w, r)
	}
}

func (f *flaky) sabotaged() int64 { return f.n[1].Load() + f.n[2].Load() + f.n[3].Load() }

// motoServer is one moto S3 server (moto[server] from the repository's
// .venv) shared by this package's tests, stopped by TestMain.
var moto struct {
	once sync.Once
	cmd  *exec.Cmd
	url  string
	err  error
}

// startMoto returns the server's URL, skipping the test when the venv (made
// by `make venv`, before `make test` runs the Go tests) is absent.
func startMoto(t *testing.T) string {
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
	moto.once.Do(func() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			moto.err = err
			return
		}
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		moto.cmd = exec.Command(bin, "-H", "127.0.0.1", "-p", port)
		if moto.err = moto.cmd.Start(); moto.err != nil {
			moto.cmd = nil
			return
		}
		moto.url = "http://127.0.0.1:" + port
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if resp, err := http.Get(moto.url + "/moto-api/data.json"); err == nil {
				resp.Body.Close()
				return
			}
		}
		moto.err = errors.New("moto_server did not answer within 60 s")
	})
	if moto.err != nil {
		t.Fatal(moto.err)
	}
	return moto.url
}

// s3Env points the standard AWS chain at endpoint with test credentials,
// away from the user's own configuration and the instance metadata service.
func s3Env(t *testing.T, endpoint string) {
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

// putObject stores data at bucket/key through the SDK, making the bucket.
func putObject(t *testing.T, bucket, key string, data []byte) {
	t.Helper()
	c, _, err := newS3Client(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		var exists interface{ ErrorCode() string }
		if !errors.As(err, &exists) || (exists.ErrorCode() != "BucketAlreadyOwnedByYou" && exists.ErrorCode() != "BucketAlreadyExists") {
			t.Fatal(err)
		}
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
}

// getObject reads a whole object through the SDK.
func getObject(t *testing.T, bucket, key string) ([]byte, error) {
	t.Helper()
	c, _, err := newS3Client(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(out.Body)
	return b.Bytes(), err
}
