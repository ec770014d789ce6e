package loader

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// FuzzDecode mutates small .beton files (JPEG and raw images, labels, bytes)
// and runs a whole epoch over each with every decoder that applies, through
// both caches: it must give errors, never a panic (a recovered panic shows
// as "internal error"), a hang or a crash.
//
// A fuzz input is a list of edits applied to one of the base files: byte 0
// picks the base file; then records of [4-byte position][1-byte length][bytes]
// overwrite the file, positions taken within the regions that hold data
// (header, descriptors, table, the used heap, the allocation table), so
// mutations land where they matter; a tail shorter than a record truncates
// the file inside those regions.
func FuzzDecode(f *testing.F) {
	dir := f.TempDir()
	bases := []string{
		writeImages(f, dir, "jpg.beton", 6, "jpg"),
		writeImages(f, dir, "raw.beton", 6, "raw"),
		writeMixed(f, dir, 6),
	}
	regions := make([][][2]int, len(bases))
	data := make([][]byte, len(bases))
	for k, p := range bases {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		data[k], regions[k] = b, dataRegions(f, p, len(b))
	}
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{2})
	// A few targeted seeds: a JPEG's first heap bytes, a column's pointer, the header.
	f.Add([]byte{0, 0, 0, 0, 0, 4, 1, 0, 0, 0})
	f.Add(edit(0, 2000, []byte{0xff, 0xd8, 0xff, 0xc0, 0, 0x11}))
	f.Add(edit(1, 1500, []byte{0xff, 0xff, 0xff, 0xff}))
	f.Add(edit(2, 8, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}))
	f.Add([]byte{1, 0x21, 0x07})
	// Found by fuzzing: an array shape of 2^44 rows made batch memory fail and
	// every later Next wait forever.
	f.Add([]byte("\x02\bKKKKKKK\x00\x00\x00\b\xff\xff\xff\xff\xff\xff\xff\x0f"))
	work := filepath.Join(dir, "fuzz.beton")
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		k := int(in[0]) % len(bases)
		b := append([]byte(nil), data[k]...)
		in = in[1:]
		for len(in) >= 5 {
			pos := mapPos(regions[k], binary.LittleEndian.Uint32(in))
			n := min(int(in[4]), len(in)-5)
			copy(b[min(pos, len(b)):], in[5:5+n])
			in = in[5+n:]
		}
		if len(in) > 0 && len(in) < 5 {
			// A short tail truncates the file inside its data.
			b = b[:min(len(b), mapPos(regions[k], uint32(in[0])<<8|uint32(in[len(in)-1])))]
		}
		if err := os.WriteFile(work, b, 0o644); err != nil {
			t.Fatal(err)
		}
		runAll(t, work)
	})
}

func edit(base byte, pos uint32, bytes []byte) []byte {
	out := []byte{base}
	out = binary.LittleEndian.AppendUint32(out, pos)
	out = append(out, byte(len(bytes)))
	return append(out, bytes...)
}

// writeMixed writes n samples with Bytes, JSON, NDArray, Float and Int fields.
func writeMixed(t testing.TB, dir string, n int) string {
	t.Helper()
	descs := []field.Desc{
		{Type: field.Bytes, Name: "blob"}, {Type: field.JSON, Name: "doc"},
		{Type: field.NDArray, Name: "arr", Shape: []uint64{2, 3}, DType: "<i2"},
		{Type: field.Float, Name: "x"}, {Type: field.Int, Name: "y"},
	}
	encs := make([]field.Encoder, len(descs))
	for i, d := range descs {
		e, err := imageenc.NewEncoder(d, field.ImageOptions{})
		if err != nil {
			t.Fatal(err)
		}
		encs[i] = e
	}
	return writeFile(t, filepath.Join(dir, "mixed.beton"), descs, encs, n, func(i int) []field.Value {
		return []field.Value{
			{Data: blob(i, 10)}, {Data: []byte(`{"i": ` + strings.Repeat("1", i+1) + `}`)},
			{Data: make([]byte, 12)}, {Float: float64(i) / 3}, {Int: int64(-i)},
		}
	})
}

// dataRegions are the byte ranges of a file that hold data.
func dataRegions(t testing.TB, path string, size int) [][2]int {
	r := betontest.Open(t, path)
	heapLo := int(r.MetadataOffset()) + int(r.NumSamples())*r.Layout.RowSize
	regions := [][2]int{{0, heapLo}}
	lo, hi := size, 0
	for i := uint64(0); i < r.NumSamples(); i++ {
		for f := range r.Fields {
			_, ptr, n, ok, err := r.Locate(i, f)
			if err == nil && ok {
				lo, hi = min(lo, int(ptr)), max(hi, int(ptr+n))
			}
		}
	}
	if lo < hi {
		regions = append(regions, [2]int{lo, hi})
	}
	return append(regions, [2]int{int(r.Header.AllocTablePtr), size})
}

// mapPos maps v into the concatenation of regions.
func mapPos(regions [][2]int, v uint32) int {
	total := 0
	for _, r := range regions {
		total += r[1] - r[0]
	}
	p := int(v) % total
	for _, r := range regions {
		if p < r[1]-r[0] {
			return r[0] + p
		}
		p -= r[1] - r[0]
	}
	return 0
}

// decoders lists the pipelines to try on each field type.
func decoders(t field.Type) [][]string {
	switch t {
	case field.RGBImage:
		return [][]string{
			{`{"op":"rgb_simple"}`, `{"op":"flip_h","p":0.5}`},
			{`{"op":"rgb_rrc","size":[5,7],"scale":[0.08,1],"ratio":[0.75,1.3333]}`, `{"op":"normalize","mean":[1,2,3],"std":[3,2,1],"dtype":"<f2"}`},
			{`{"op":"rgb_center","size":[4,4],"ratio":0.875}`, `{"op":"translate","padding":1,"fill":[0,0,0]}`},
		}
	case field.Int:
		return [][]string{{`{"op":"int"}`}}
	case field.Float:
		return [][]string{{`{"op":"float"}`}}
	case field.Bytes, field.JSON:
		return [][]string{{`{"op":"bytes"}`}}
	case field.NDArray, field.TorchTensor:
		return [][]string{{`{"op":"ndarray"}`}}
	}
	return nil
}

// runAll opens path and runs an epoch of every applicable pipeline; errors
// are fine, recovered panics are not.
func runAll(t *testing.T, path string) {
	r, err := beton.Open(path, nil)
	if err != nil {
		return
	}
	defer r.Close()
	if r.NumSamples() > 1<<16 {
		t.Fatalf("opened a file claiming %d samples", r.NumSamples())
	}
	for f, d := range r.Fields {
		for v, ops := range decoders(d.Type) {
			raw := make([]json.RawMessage, len(ops))
			for i, op := range ops {
				raw[i] = json.RawMessage(op)
			}
			p, err := pipeline.Build(r, f, raw)
			if err != nil {
				checkErr(t, err)
				continue
			}
			cfg := Config{BatchSize: 4, Workers: 2, BatchesAhead: 1, Order: "quasi_random", Seed: 1,
				OSCache: v%2 == 0, SkipErrors: v%2 == 1, MaxResidentPages: 1}
			l, err := New(r, cfg, []*pipeline.Program{p})
			if err != nil {
				checkErr(t, err)
				continue
			}
			it, err := l.Start(0, 0, nil, false)
			if err != nil {
				checkErr(t, err)
				l.Close()
				continue
			}
			for {
				b, err := it.Next()
				if err != nil {
					checkErr(t, err)
					continue
				}
				if b == nil {
					break
				}
				b.Release()
			}
			it.Close()
			l.Close()
		}
	}
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	if strings.Contains(err.Error(), "internal error") {
		t.Fatalf("a panic was recovered: %v", err)
	}
}
