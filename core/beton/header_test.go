package beton

import (
	"errors"
	"strings"
	"testing"
)

// A file that is not a .beton is named for what it is, not read as a header
// of a strange version ("version 55551" for a JPEG).
func TestHeaderOfAnotherKindOfFile(t *testing.T) {
	good := (&Header{Version: Version, PageSize: DefaultPageSize}).marshal()
	cases := []struct {
		name, head, want string
	}{
		{"JPEG", "\xff\xd8\xff\xe0\x00\x10JFIF", "does not begin with a .beton header: it is a JPEG image"},
		{"PNG", "\x89PNG\r\n\x1a\n", "it is a PNG image"},
		{"MP4", "\x00\x00\x00\x20ftypisom", "it is an MP4/MOV video"},
		{"text", "hello, world", "does not begin with a .beton header"},
		{"old version", "\x01\x00", "version 1, only version 2 is supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := append([]byte(c.head), make([]byte, HeaderSize)...)
			copy(b[len(c.head):], good[len(c.head):])
			_, err := parseHeader(b[:HeaderSize+len(c.head)])
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if strings.Contains(c.want, "header") && strings.Contains(err.Error(), "version") {
				t.Fatalf("err = %v names a version", err)
			}
		})
	}
}
