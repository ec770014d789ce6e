package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ParseS3 splits s3://bucket/key.
func ParseS3(rawURL string) (bucket, key string, err error) {
	if !hasScheme(rawURL, "s3://") {
		return "", "", fmt.Errorf("%s: %w: not an s3:// URL", Redact(rawURL), ErrBadURL)
	}
	bucket, key, _ = strings.Cut(rawURL[len("s3://"):], "/")
	if bucket == "" || key == "" {
		return "", "", fmt.Errorf("%s: %w: an S3 URL needs a bucket and a key: s3://bucket/key", Redact(rawURL), ErrBadURL)
	}
	return bucket, key, nil
}

// newS3Client builds a client from the standard AWS configuration chain
// (awsConfig); S3-compatible servers named by an endpoint override get
// path-style addressing. The SDK's own retries are off: this package
// retries, and counts them. Nothing here logs; the SDK logs nothing unless
// asked. The HTTP client is returned too, for closing its idle connections.
func newS3Client(ctx context.Context, inFlight int) (*s3.Client, *http.Client, error) {
	cfg, err := awsConfig(ctx)
	if err != nil {
		return nil, nil, err
	}
	cfg.Logger = logging.Nop{} // errors come back to the caller; nothing goes to stderr
	hc := newHTTPClient(inFlight)
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.HTTPClient = hc
		o.Retryer = aws.NopRetryer{}
		if o.BaseEndpoint != nil {
			// S3-compatible servers (MinIO, Ceph, moto...) rarely serve
			// bucket subdomains, and older ones reject the newer default
			// checksum headers.
			o.UsePathStyle = true
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	}), hc, nil
}

// s3Failure classifies an SDK error: the HTTP status, the S3 error code,
// whether a retry may pass, and a short message without the SDK's request
// dump. Credential lookups that fail are final: retrying cannot find any.
func s3Failure(err error) (int, string, bool, error) {
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) {
		if strings.Contains(err.Error(), "retrieve credentials") || strings.Contains(err.Error(), "get identity") {
			return 0, "", false, fmt.Errorf("no usable AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "+
				"or AWS_PROFILE with ~/.aws/credentials): %w", innermost(err))
		}
		return 0, "", transient(err), innermost(err)
	}
	status := re.HTTPStatusCode()
	if status == 0 {
		// The connection broke before a status line was read: no response.
		return 0, "", transient(err), innermost(err)
	}
	var code, msg string
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code, msg = ae.ErrorCode(), ae.ErrorMessage()
	}
	switch {
	case msg != "":
	case code == "NotFound" || status == 404:
		msg = "not found"
	case code == "Forbidden" || status == 403:
		msg = "access denied (check the credentials and the bucket policy)"
	default:
		msg = http.StatusText(status)
	}
	if code == "NotFound" || code == "Forbidden" || code == strings.ReplaceAll(http.StatusText(status), " ", "") {
		code = "" // HEAD-style codes that only repeat the status
	}
	return status, code, retryStatus(status, code), errors.New(msg)
}

// innermost drops the SDK's "operation error S3: GetObject, ..." wrappers
// and url.Error's URL, keeping the cause (connection refused, EOF...).
func innermost(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}

type s3Getter struct {
	client      *s3.Client
	hc          *http.Client
	bucket, key string
	etag        *string
}

// openS3 learns the size and ETag with a one-byte GET (not HEAD: its error
// body tells a missing bucket from a missing key).
func openS3(ctx context.Context, o *Object, rawURL string) (getter, int64, error) {
	bucket, key, err := ParseS3(rawURL)
	if err != nil {
		return nil, 0, err
	}
	client, hc, err := newS3Client(ctx, o.opts.MaxInFlight)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", o.url, err)
	}
	g := &s3Getter{client: client, hc: hc, bucket: bucket, key: key}
	var size int64
	err = retry(ctx, o.opts, &o.count, o.sem, func(ctx context.Context) (int, string, bool, error) {
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key, Range: aws.String("bytes=0-0")})
		if err != nil {
			status, code, again, e := s3Failure(err)
			if code == "InvalidRange" { // an empty object
				size = 0
				return status, code, false, nil
			}
			return status, code, again, e
		}
		defer out.Body.Close()
		_, _, total, err := parseContentRange(aws.ToString(out.ContentRange))
		if err != nil || total < 0 {
			return 206, "", false, err
		}
		size = total
		if et := aws.ToString(out.ETag); et != "" {
			g.etag = &et
		}
		return 206, "", false, nil
	}, func(status int, code string, attempts int, err error) error {
		return &Error{URL: o.url, Op: "open", Status: status, Code: code, Attempts: attempts, Err: err}
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && key != "" && hasObjectsUnder(ctx, client, bucket, key) {
			// s3://bucket/prefix as Streaming and litdata users write a directory.
			err = fmt.Errorf("%w (objects exist under %s/: a directory is named with its trailing slash)", err, o.url)
		}
		g.close()
		return nil, 0, err
	}
	return g, size, nil
}

// hasObjectsUnder tells whether objects exist under key + "/": whether
// s3://bucket/key names a directory rather than an object.
func hasObjectsUnder(ctx context.Context, client *s3.Client, bucket, key string) bool {
	prefix := strings.TrimSuffix(key, "/") + "/"
	out, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	return err == nil && len(out.Contents) > 0
}

func (g *s3Getter) get(ctx context.Context, p []byte, off int64) (int, string, bool, error) {
	end := off + int64(len(p)) - 1
	out, err := g.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: &g.bucket, Key: &g.key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, end)), IfMatch: g.etag,
	})
	if err != nil {
		status, code, again, e := s3Failure(err)
		if status == http.StatusPreconditionFailed {
			e = errors.New("the object changed since it was opened")
		}
		return status, code, again, e
	}
	defer out.Body.Close()
	if a, b, _, err := parseContentRange(aws.ToString(out.ContentRange)); err != nil || a != off || b != end {
		return 206, "", false, fmt.Errorf("asked for bytes %d-%d, got Content-Range %q", off, end, aws.ToString(out.ContentRange))
	}
	if _, err := io.ReadFull(out.Body, p); err != nil {
		return 206, "", transient(err), fmt.Errorf("response body: %w", innermost(err))
	}
	return 206, "", false, nil
}

func (g *s3Getter) close() { g.hc.CloseIdleConnections() }

// Upload is a multipart upload to S3: begun before a file is written (so a
// missing bucket or bad credentials fail before hours of conversion), then
// completed with the finished file, or aborted. Until completion no object
// appears under the key; an aborted upload leaves nothing behind.
type Upload struct {
	client      *s3.Client
	hc          *http.Client
	bucket, key string
	id          string
	url         string
	opts        Options
	sem         chan struct{}
	count       counters
	mu          sync.Mutex
	done        bool
}

// BeginUpload starts a multipart upload to s3://bucket/key.
func BeginUpload(ctx context.Context, rawURL string, opts Options) (*Upload, error) {
	opts = opts.withDefaults()
	bucket, key, err := ParseS3(rawURL)
	if err != nil {
		return nil, err
	}
	u := &Upload{bucket: bucket, key: key, url: Redact(rawURL), opts: opts, sem: make(chan struct{}, opts.MaxInFlight)}
	if u.client, u.hc, err = newS3Client(ctx, opts.MaxInFlight); err != nil {
		return nil, fmt.Errorf("%s: %w", u.url, err)
	}
	err = retry(ctx, opts, &u.count, u.sem, func(ctx context.Context) (int, string, bool, error) {
		out, err := u.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
		if err != nil {
			return s3Failure(err)
		}
		u.id = aws.ToString(out.UploadId)
		return 200, "", false, nil
	}, u.fail("start upload", 0, 0))
	if err != nil {
		u.hc.CloseIdleConnections()
		return nil, err
	}
	return u, nil
}

func (u *Upload) fail(op string, off, end int64) func(int, string, int, error) error {
	return func(status int, code string, attempts int, err error) error {
		return &Error{URL: u.url, Op: op, Off: off, End: end, Status: status, Code: code, Attempts: attempts, Err: err}
	}
}

// URL is the destination, redacted.
func (u *Upload) URL() string { return u.url }

// Stats returns the upload's counters.
func (u *Upload) Stats() Stats { return u.count.stats() }

// partSize is 16 MiB, or larger so that no file needs more than S3's 10,000 parts.
func partSize(size int64) int64 {
	ps := int64(16 << 20)
	for (size+ps-1)/ps > 10000 {
		ps *= 2
	}
	return ps
}

// Complete uploads the file at path as the object's parts, concurrently, and
// completes the upload; on any failure the upload is aborted.
func (u *Upload) Complete(ctx context.Context, path string) (err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return fmt.Errorf("%s: upload already completed or aborted", u.url)
	}
	defer func() {
		if err != nil {
			u.abortLocked()
		}
		u.done = true
		u.hc.CloseIdleConnections()
	}()
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", u.url, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", u.url, err)
	}
	size, ps := st.Size(), partSize(st.Size())
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		parts []types.CompletedPart
		errs  []error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for num, off := int32(1), int64(0); off < size || num == 1; num, off = num+1, off+ps {
		n := min(ps, size-off)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var etag *string
			err := retry(ctx, u.opts, &u.count, u.sem, func(ctx context.Context) (int, string, bool, error) {
				out, err := u.client.UploadPart(ctx, &s3.UploadPartInput{
					Bucket: &u.bucket, Key: &u.key, UploadId: &u.id, PartNumber: aws.Int32(num),
					Body: io.NewSectionReader(f, off, n), ContentLength: aws.Int64(n),
				})
				if err != nil {
					return s3Failure(err)
				}
				etag = out.ETag
				u.count.bytes.Add(uint64(n))
				return 200, "", false, nil
			}, u.fail(fmt.Sprintf("upload part %d", num), off, off+n))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				cancel() // the other parts are wasted work now
				return
			}
			parts = append(parts, types.CompletedPart{ETag: etag, PartNumber: aws.Int32(num)})
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	sort.Slice(parts, func(i, j int) bool { return *parts[i].PartNumber < *parts[j].PartNumber })
	return retry(ctx, u.opts, &u.count, u.sem, func(ctx context.Context) (int, string, bool, error) {
		_, err := u.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: &u.bucket, Key: &u.key, UploadId: &u.id, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		})
		if err != nil {
			return s3Failure(err)
		}
		return 200, "", false, nil
	}, u.fail("complete upload", 0, 0))
}

// Abort abandons the upload: S3 discards its parts and no object appears.
// Aborting a completed or aborted upload does nothing.
func (u *Upload) Abort() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return nil
	}
	u.done = true
	defer u.hc.CloseIdleConnections()
	return u.abortLocked()
}

func (u *Upload) abortLocked() error {
	// Not the caller's context: it may be the one that was cancelled.
	return retry(context.Background(), u.opts, &u.count, u.sem, func(ctx context.Context) (int, string, bool, error) {
		_, err := u.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &u.bucket, Key: &u.key, UploadId: &u.id})
		if err != nil {
			status, code, again, e := s3Failure(err)
			if status == 404 { // already gone
				return status, code, false, nil
			}
			return status, code, again, e
		}
		return 204, "", false, nil
	}, u.fail("abort upload", 0, 0))
}

// IsS3Pattern tells whether rawURL names several S3 objects for Glob: a
// "directory" (ending in /) or a key with glob characters (* ? [).
func IsS3Pattern(rawURL string) bool {
	if !hasScheme(rawURL, "s3://") {
		return false
	}
	bucket, key, slash := strings.Cut(rawURL[len("s3://"):], "/")
	return bucket != "" && slash && (key == "" || strings.HasSuffix(key, "/") || strings.ContainsAny(key, "*?["))
}

// Glob lists the objects an S3 pattern names, sorted: for
// s3://bucket/dir/ the *.beton objects directly under dir/, for a key with
// glob characters the keys path.Match accepts (* stops at /). No match is an
// fs.ErrNotExist error.
func Glob(ctx context.Context, pattern string, opts Options) ([]string, error) {
	opts = opts.withDefaults()
	red := Redact(pattern)
	bucket, key, _ := strings.Cut(pattern[len("s3://"):], "/")
	if bucket == "" {
		return nil, fmt.Errorf("%s: %w: no bucket", red, ErrBadURL)
	}
	match := key + "*.beton" // a directory
	if !strings.HasSuffix(key, "/") && key != "" {
		match = key
	}
	if _, err := path.Match(match, ""); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", red, ErrBadURL, err)
	}
	prefix := match[:strings.IndexAny(match, "*?[")]
	client, hc, err := newS3Client(ctx, opts.MaxInFlight)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", red, err)
	}
	defer hc.CloseIdleConnections()
	var (
		out   []string
		token *string
		count counters
		sem   = make(chan struct{}, 1)
	)
	for {
		var page *s3.ListObjectsV2Output
		err := retry(ctx, opts, &count, sem, func(ctx context.Context) (int, string, bool, error) {
			var err error
			page, err = client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, ContinuationToken: token})
			if err != nil {
				return s3Failure(err)
			}
			return 200, "", false, nil
		}, func(status int, code string, attempts int, err error) error {
			return &Error{URL: red, Op: "list", Status: status, Code: code, Attempts: attempts, Err: err}
		})
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			if k := aws.ToString(o.Key); !strings.HasSuffix(k, "/") {
				if ok, _ := path.Match(match, k); ok {
					out = append(out, "s3://"+bucket+"/"+k)
				}
			}
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			break
		}
		token = page.NextContinuationToken
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w: the pattern matches no object", red, fs.ErrNotExist)
	}
	sort.Strings(out)
	return out, nil
}
