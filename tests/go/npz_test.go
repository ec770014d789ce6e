package gotests

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// npyArray is an array read from a .npy member of a .npz file.
type npyArray struct {
	dtype string // e.g. "<i8", "|u1"
	shape []int
	data  []byte
}

var npyHeader = regexp.MustCompile(`'descr':\s*'([^']+)'.*'fortran_order':\s*(\w+).*'shape':\s*\(([^)]*)\)`)

// loadNPZ reads every array of an uncompressed or deflated .npz file.
func loadNPZ(path string) (map[string]npyArray, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out := map[string]npyArray{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		if len(b) < 10 || string(b[1:6]) != "NUMPY" {
			return nil, fmt.Errorf("%s: %s is not a .npy file", path, f.Name)
		}
		var hlen, start int
		if b[6] == 1 {
			hlen, start = int(binary.LittleEndian.Uint16(b[8:])), 10
		} else {
			hlen, start = int(binary.LittleEndian.Uint32(b[8:])), 12
		}
		m := npyHeader.FindStringSubmatch(string(b[start : start+hlen]))
		if m == nil || m[2] != "False" {
			return nil, fmt.Errorf("%s: %s: unsupported header %q", path, f.Name, b[start:start+hlen])
		}
		a := npyArray{dtype: m[1], data: b[start+hlen:]}
		for _, s := range strings.Split(m[3], ",") {
			if s = strings.TrimSpace(s); s != "" {
				n, _ := strconv.Atoi(s)
				a.shape = append(a.shape, n)
			}
		}
		out[strings.TrimSuffix(f.Name, ".npy")] = a
	}
	return out, nil
}

func (a npyArray) int64s() []int64 {
	out := make([]int64, len(a.data)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(a.data[8*i:]))
	}
	return out
}

func (a npyArray) strings() []string {
	// '<Un' arrays: n UTF-32 code points per element.
	n, _ := strconv.Atoi(a.dtype[2:])
	var out []string
	for off := 0; off+4*n <= len(a.data); off += 4 * n {
		var sb strings.Builder
		for k := 0; k < n; k++ {
			r := rune(binary.LittleEndian.Uint32(a.data[off+4*k:]))
			if r == 0 {
				break
			}
			sb.WriteRune(r)
		}
		out = append(out, sb.String())
	}
	return out
}
