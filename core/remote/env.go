package remote

/*
extern char **environ;
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// This file is the one place the library reads its environment for remote
// files: the request settings (FFCV_GO_REMOTE_*) and, through the AWS SDK's
// configuration chain, credentials, region and endpoint (AWS_*).

// ErrBadEnv is wrapped by errors about an FFCV_GO_REMOTE_* variable.
var ErrBadEnv = errors.New("invalid environment variable")

// OptionsFromEnv reads the request settings of s3:// and http(s):// files
// from FFCV_GO_REMOTE_IN_FLIGHT, _ATTEMPTS, _BACKOFF and _TIMEOUT (the last
// two in seconds); unset ones keep the defaults.
func OptionsFromEnv() (Options, error) {
	syncEnv()
	var o Options
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
			what := "number of seconds"
			if v.count != nil {
				what = "integer"
			}
			return o, fmt.Errorf("%w: %s=%q must be a positive %s", ErrBadEnv, v.name, s, what)
		}
		if v.count != nil {
			*v.count = int(x)
		} else {
			*v.seconds = time.Duration(x * float64(time.Second))
		}
	}
	return o, nil
}

// awsConfig loads the standard AWS configuration chain: credentials from
// the environment, ~/.aws/config and credentials files (AWS_PROFILE), SSO,
// web identity or the instance role; the region from AWS_REGION or the
// profile (us-east-1 when none is set); an endpoint override from
// AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL or the profile's endpoint_url.
func awsConfig(ctx context.Context) (aws.Config, error) {
	syncEnv()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	return cfg, nil
}

// syncEnv copies the process's current AWS_* and FFCV_GO_REMOTE_* variables
// into Go's environment. Loaded as a C library, Go copies the environment
// once, at load: credentials or an endpoint set later (os.environ in
// Python, setenv in C) reach only the C environment, where neither this
// package nor the AWS SDK would see them. In a Go program the two are the
// same and this changes nothing.
func syncEnv() {
	relevant := func(kv string) bool {
		return strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "FFCV_GO_REMOTE_")
	}
	want := map[string]string{}
	for p := C.environ; p != nil && *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(p))) {
		if kv := C.GoString(*p); relevant(kv) {
			k, v, _ := strings.Cut(kv, "=")
			want[k] = v
		}
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
