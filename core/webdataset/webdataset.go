// Package webdataset reads webdataset shards: tar files (optionally
// gzipped) whose consecutive members sharing a key form one sample, e.g.
// 000123.jpg, 000123.txt and 000123.json. Members are grouped as the
// webdataset package groups them: the key is the path up to the first dot
// of the file name, the extension everything after it, lowercased;
// directories, links and names like __key__ are skipped.
package webdataset

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Member is one file of a sample.
type Member struct {
	Name string // its path in the tar
	Ext  string // after the first dot of its file name, lowercased ("jpg", "seg.png")
	Data []byte
}

// Sample is the consecutive members of a shard that share a key.
type Sample struct {
	Key     string
	Members []Member
	// Duplicates are members whose extension the sample already had: the
	// first one is kept.
	Duplicates []Member
}

// Member returns the member with extension ext, or nil.
func (s *Sample) Member(ext string) *Member {
	for i := range s.Members {
		if s.Members[i].Ext == ext {
			return &s.Members[i]
		}
	}
	return nil
}

// ErrFormat is wrapped by errors about a shard that is not a readable tar
// file (truncated, corrupt headers, not a tar at all).
var ErrFormat = errors.New("not a readable tar file")

// MaxMember bounds one member's size: a larger one is an error rather
// than an allocation of whatever a corrupt header claims.
const MaxMember = 1 << 32

// Reader reads the samples of one shard in order.
type Reader struct {
	tr      *tar.Reader
	src     *zeros
	next    *Member // the first member of the next sample, read ahead
	nextKey string
	done    bool
	err     error  // met while reading ahead: returned after the sample before it
	errKey  string // the key of the member the error is in; "" if unknown
	last    string // the key of the last member read, for errors
	lastOf  string // the name of the last member read
}

// Error is damage in a shard: Key is the sample it cost ("" when it cost
// none, as damage before the first member), Member the member it is in or,
// for damage between members (a cut, a corrupt header), the last member
// read before it ("" when none was).
type Error struct {
	Key, Member string
	After       bool // the damage lies after Member, not in it
	Err         error
}

func (e *Error) Error() string {
	switch {
	case e.Key == "":
		return "at the start: " + e.Err.Error()
	case e.After:
		return fmt.Sprintf("sample %q, after member %q: %v", e.Key, e.Member, e.Err)
	}
	return fmt.Sprintf("sample %q, member %q: %v", e.Key, e.Member, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// zeros counts the bytes read and the zero bytes that end them: a tar
// ends with two zero blocks, which tell a complete shard from one cut
// at a member's boundary (archive/tar sees a clean end in both).
type zeros struct {
	r        io.Reader
	n, trail int64
}

func (z *zeros) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	z.n += int64(n)
	for i := n - 1; i >= 0; i-- {
		if p[i] != 0 {
			z.trail = int64(n - 1 - i)
			return n, err
		}
	}
	z.trail += int64(n)
	return n, err
}

// NewReader reads a shard from r: a tar stream, or a gzipped one.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var src io.Reader = br
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrFormat, err)
		}
		src = gz
	}
	z := &zeros{r: src}
	return &Reader{tr: tar.NewReader(z), src: z}, nil
}

// Next returns the next sample, or io.EOF after the last one. An error
// other than io.EOF (a truncated or corrupt tar, a read failure) ends the
// shard; it names the key of the last sample read.
func (r *Reader) Next() (*Sample, error) {
	if r.next == nil && !r.done {
		r.err = r.advance()
	}
	if r.next == nil {
		if r.err != nil {
			return nil, r.err
		}
		return nil, io.EOF
	}
	s := &Sample{Key: r.nextKey, Members: []Member{*r.next}}
	for {
		if r.err = r.advance(); r.err != nil {
			if r.errKey == "" || r.errKey == s.Key {
				return nil, r.err // s may have lost a member
			}
			break // s is whole: the damage is in another sample's member
		}
		if r.next == nil || r.nextKey != s.Key {
			break
		}
		if s.Member(r.next.Ext) != nil {
			s.Duplicates = append(s.Duplicates, *r.next)
		} else {
			s.Members = append(s.Members, *r.next)
		}
	}
	return s, nil
}

// advance reads the next member that belongs to a sample into r.next (nil
// at the end).
func (r *Reader) advance() error {
	r.next = nil
	for !r.done {
		h, err := r.tr.Next()
		if err == io.EOF {
			switch {
			case r.src.n == 0:
				return r.fail(fmt.Errorf("%w: empty file", ErrFormat), "")
			case r.src.trail < 2*512:
				return r.fail(fmt.Errorf("%w: no end-of-archive blocks (truncated?)", ErrFormat), "")
			}
			r.done = true
			return nil
		}
		if err != nil {
			return r.fail(err, "")
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA {
			continue
		}
		key, ext, ok := Split(h.Name)
		if !ok {
			continue
		}
		r.errKey = key
		if h.Size < 0 || h.Size > MaxMember {
			return r.fail(fmt.Errorf("%w: member of %d bytes", ErrFormat, h.Size), h.Name)
		}
		data, err := readMember(r.tr, h.Size)
		if err != nil {
			return r.fail(err, h.Name)
		}
		r.errKey = ""
		r.next, r.nextKey, r.last, r.lastOf = &Member{Name: h.Name, Ext: ext, Data: data}, key, key, h.Name
		return nil
	}
	return nil
}

// firstChunk is the most a member's buffer starts with: it grows as the
// bytes arrive, so a header's size is never allocated before the bytes
// are there.
const firstChunk = 64 << 10

// readMember reads a member of size bytes; io.ErrUnexpectedEOF when the
// shard ends before them.
func readMember(r io.Reader, size int64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(size, firstChunk)))
	n, err := buf.ReadFrom(io.LimitReader(r, size))
	if err == nil && n < size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, fmt.Errorf("member of %d bytes, %d there: %w", size, n, err)
	}
	return buf.Bytes(), nil
}

// fail ends the shard with err, met in member (its name) or, when member
// is "", between members: the sample it costs is the one being read.
func (r *Reader) fail(err error, member string) error {
	r.done = true
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("%w: %v (truncated?)", ErrFormat, err)
	case errors.Is(err, tar.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
		err = fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if member != "" {
		return &Error{Key: r.errKey, Member: member, Err: err}
	}
	return &Error{Key: r.last, Member: r.lastOf, After: r.last != "", Err: err}
}

// Split splits a member's name into its sample key and extension as the
// webdataset package does (base_plus_ext): the key runs to the first dot
// of the file name. ok is false for names webdataset skips: without such a
// dot, or metadata names like __key__ or __meta__/x; and for a name ending
// in that dot, whose member no field could take.
func Split(name string) (key, ext string, ok bool) {
	if first, _, _ := strings.Cut(name, "/"); len(first) >= 4 && strings.HasPrefix(first, "__") && strings.HasSuffix(first, "__") {
		return "", "", false
	}
	dir, file := path.Split(name)
	dot := strings.IndexByte(file, '.')
	if dot <= 0 || dot == len(file)-1 {
		return "", "", false
	}
	return dir + file[:dot], strings.ToLower(file[dot+1:]), true
}
