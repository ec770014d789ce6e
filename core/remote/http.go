package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// httpGetter reads an object with Range requests. A strong ETag seen at open
// is sent as If-Match, so a file replaced on the server fails (412) instead
// of mixing two versions.
type httpGetter struct {
	client *http.Client
	url    string
	etag   string
}

func newHTTPClient(inFlight int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = inFlight
	// Pages are compressed JPEGs and packed arrays: gzip would cost CPU on
	// both ends for nothing, and breaks byte ranges on some servers.
	t.DisableCompression = true
	return &http.Client{Transport: t}
}

// openHTTP learns the size (and ETag) with a one-byte range request, which
// also proves that the server honours ranges.
func openHTTP(ctx context.Context, o *Object, rawURL string) (getter, int64, error) {
	if _, err := url.Parse(rawURL); err != nil {
		return nil, 0, fmt.Errorf("%s: %w: %v", o.url, ErrBadURL, unwrapURLError(err))
	}
	g := &httpGetter{client: newHTTPClient(o.opts.MaxInFlight), url: rawURL}
	var size int64
	err := retry(ctx, o.opts, &o.count, o.sem, func(ctx context.Context) (int, string, bool, error) {
		resp, err := g.request(ctx, "bytes=0-0")
		if err != nil {
			return 0, "", transient(err), err
		}
		defer drain(resp)
		switch resp.StatusCode {
		case http.StatusPartialContent:
			_, _, total, err := parseContentRange(resp.Header.Get("Content-Range"))
			if err != nil || total < 0 {
				return resp.StatusCode, "", false, fmt.Errorf("bad Content-Range %q", resp.Header.Get("Content-Range"))
			}
			size = total
		case http.StatusRequestedRangeNotSatisfiable: // an empty object
			size = 0
		case http.StatusOK:
			return resp.StatusCode, "", false, errors.New("the server ignores Range requests (answered 200 to a range GET); it must support byte ranges")
		default:
			return resp.StatusCode, "", retryStatus(resp.StatusCode, ""), errors.New(http.StatusText(resp.StatusCode))
		}
		if et := resp.Header.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
			g.etag = et
		}
		return resp.StatusCode, "", false, nil
	}, func(status int, code string, attempts int, err error) error {
		return &Error{URL: o.url, Op: "open", Status: status, Attempts: attempts, Err: err}
	})
	if err != nil {
		g.close()
		return nil, 0, err
	}
	return g, size, nil
}

func (g *httpGetter) request(ctx context.Context, rng string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.url, nil)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	req.Header.Set("Range", rng)
	if g.etag != "" {
		req.Header.Set("If-Match", g.etag)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	return resp, nil
}

func (g *httpGetter) get(ctx context.Context, p []byte, off int64) (int, string, bool, error) {
	end := off + int64(len(p)) - 1
	resp, err := g.request(ctx, fmt.Sprintf("bytes=%d-%d", off, end))
	if err != nil {
		return 0, "", transient(err), err
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusPreconditionFailed:
		return resp.StatusCode, "", false, errors.New("the file changed on the server since it was opened")
	default:
		return resp.StatusCode, "", retryStatus(resp.StatusCode, ""), errors.New(http.StatusText(resp.StatusCode))
	}
	if a, b, _, err := parseContentRange(resp.Header.Get("Content-Range")); err != nil || a != off || b != end {
		return resp.StatusCode, "", false, fmt.Errorf("asked for bytes %d-%d, got Content-Range %q", off, end, resp.Header.Get("Content-Range"))
	}
	if _, err := io.ReadFull(resp.Body, p); err != nil {
		// A body cut short: the connection dropped mid-response.
		return resp.StatusCode, "", transient(err), fmt.Errorf("response body: %w", err)
	}
	return resp.StatusCode, "", false, nil
}

func (g *httpGetter) close() { g.client.CloseIdleConnections() }

// drain reads a little of what is left so the connection can be reused,
// then closes the body.
func drain(resp *http.Response) {
	io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
}

// unwrapURLError drops *url.Error's copy of the URL (with its query, which
// may hold a presigned signature): callers name the URL themselves, redacted.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// parseContentRange reads "bytes a-b/total" (total -1 for "*").
func parseContentRange(s string) (a, b, total int64, err error) {
	bad := fmt.Errorf("bad Content-Range %q", s)
	rest, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return 0, 0, 0, bad
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, bad
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, 0, bad
		}
	}
	as, bs, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, bad
	}
	if a, err = strconv.ParseInt(as, 10, 64); err != nil {
		return 0, 0, 0, bad
	}
	if b, err = strconv.ParseInt(bs, 10, 64); err != nil {
		return 0, 0, 0, bad
	}
	return a, b, total, nil
}
