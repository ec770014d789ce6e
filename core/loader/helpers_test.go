package loader

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
	"github.com/ffcv-go/ffcv-go/core/internal/betontest"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/ops" // the operations the tests build
)

const imgW, imgH = 8, 6

// pixels is sample i's raw image: every byte depends on the sample and position.
func pixels(i int) []byte {
	b := make([]byte, imgW*imgH*3)
	for k := range b {
		b[k] = byte(i*31 + k*7)
	}
	return b
}

// blob is sample i's Bytes value: blobSize(i) bytes, the first 8 the id.
func blob(i, size int) []byte {
	b := make([]byte, size+(i*4099)%1000)
	for k := range b {
		b[k] = byte(i + k/251)
	}
	binary.LittleEndian.PutUint64(b, uint64(i))
	return b
}

// writeImages writes n samples (image: RGBImage of imgW×imgH in mode, label:
// Int = i) to dir/name and returns the path.
func writeImages(t testing.TB, dir, name string, n int, mode string) string {
	t.Helper()
	img, err := imageenc.NewEncoder(field.Desc{Type: field.RGBImage}, field.ImageOptions{WriteMode: mode, JPEGQuality: 90})
	if err != nil {
		t.Fatal(err)
	}
	descs := []field.Desc{{Type: field.RGBImage, Name: "image"}, {Type: field.Int, Name: "label"}}
	encs := []field.Encoder{img, field.NewIntEncoder()}
	return writeFile(t, filepath.Join(dir, name), descs, encs, n, func(i int) []field.Value {
		return []field.Value{{Data: pixels(i), Width: imgW, Height: imgH, Channels: 3}, {Int: int64(i)}}
	})
}

// writeBlobs writes n samples (blob: Bytes of about size bytes, label: Int)
// on 2 MiB pages.
func writeBlobs(t testing.TB, dir string, n, size int) string {
	t.Helper()
	descs := []field.Desc{{Type: field.Bytes, Name: "blob"}, {Type: field.Int, Name: "label"}}
	bytesEnc, err := imageenc.NewEncoder(descs[0], field.ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	encs := []field.Encoder{bytesEnc, field.NewIntEncoder()}
	return writeFile(t, filepath.Join(dir, "blobs.beton"), descs, encs, n, func(i int) []field.Value {
		return []field.Value{{Data: blob(i, size)}, {Int: int64(i)}}
	})
}

// writeFile writes n samples (value(i) for sample i) on the smallest pages.
func writeFile(t testing.TB, path string, descs []field.Desc, encs []field.Encoder, n int, value func(int) []field.Value) string {
	t.Helper()
	return betontest.WriteFile(t, path, descs, encs, beton.WriterOptions{PageSize: beton.MinPageSize, Workers: 2}, n, value)
}

// build compiles one program per output, each a list of operation specs.
func build(t testing.TB, r *beton.Reader, outputs map[string][]string) []*pipeline.Program {
	t.Helper()
	var progs []*pipeline.Program
	for f, d := range r.Fields {
		ops, ok := outputs[d.Name]
		if !ok {
			continue
		}
		raw := make([]json.RawMessage, len(ops))
		for k, op := range ops {
			raw[k] = json.RawMessage(op)
		}
		p, err := pipeline.Build(r, f, raw)
		if err != nil {
			t.Fatalf("field %s: %v", d.Name, err)
		}
		progs = append(progs, p)
	}
	return progs
}

// imagePipeline has random per-sample transforms and a label.
var imagePipeline = map[string][]string{
	"image": {`{"op":"rgb_simple"}`, `{"op":"flip_h","p":0.5}`, `{"op":"translate","padding":2,"fill":[1,2,3]}`,
		`{"op":"cutout","size":2,"fill":[0,0,0]}`},
	"label": {`{"op":"int"}`},
}

func newLoader(t testing.TB, r *beton.Reader, cfg Config, outputs map[string][]string) *Loader {
	t.Helper()
	l, err := New(r, cfg, build(t, r, outputs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// copied is a batch copied out of its slot: the outputs then the sample ids.
type copied struct {
	index int
	bufs  [][]byte
}

func copyBatch(l *Loader, b *Batch) copied {
	c := copied{index: b.Index}
	for k := 0; k <= len(l.progs); k++ {
		per := 8
		if k < len(l.progs) {
			per = l.progs[k].Out.Bytes()
		}
		c.bufs = append(c.bufs, slices.Clone(b.Bufs[k][:b.N*per]))
	}
	return c
}

func (c copied) ids() []uint64 {
	b := c.bufs[len(c.bufs)-1]
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}

// epoch runs one epoch from start, copying and releasing every batch.
func epoch(t testing.TB, l *Loader, ep uint64, start int) []copied {
	t.Helper()
	it, err := l.Start(ep, start, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []copied
	for {
		b, err := it.Next()
		if err != nil {
			t.Fatalf("batch %d: %v", start+len(out), err)
		}
		if b == nil {
			return out
		}
		out = append(out, copyBatch(l, b))
		b.Release()
	}
}

func sameEpochs(t testing.TB, what string, a, b []copied) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d batches vs %d", what, len(a), len(b))
	}
	for i := range a {
		if a[i].index != b[i].index {
			t.Fatalf("%s: batch %d has index %d vs %d", what, i, a[i].index, b[i].index)
		}
		for k := range a[i].bufs {
			if !slices.Equal(a[i].bufs[k], b[i].bufs[k]) {
				t.Fatalf("%s: batch %d, buffer %d differs", what, a[i].index, k)
			}
		}
	}
}

// settleGoroutines waits (up to 5 s) for the goroutine count to drop to want.
func settleGoroutines(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), want, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// corruptCopy copies src to dir/name and applies edit to its bytes.
func corruptCopy(t testing.TB, src, dir, name string, edit func(r *beton.Reader, data []byte)) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	r := betontest.Open(t, src)
	edit(r, data)
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// columnOffset is the file offset of field f's column of sample i.
func columnOffset(r *beton.Reader, i uint64, f int) int {
	return int(r.MetadataOffset()) + int(i)*r.Layout.RowSize + r.Layout.Offsets[f]
}

// heapRange is the file range of field f's heap bytes of sample i.
func heapRange(t testing.TB, r *beton.Reader, i uint64, f int) (int, int) {
	t.Helper()
	col, heap, err := r.Read(i, f)
	if err != nil {
		t.Fatal(err)
	}
	var ptr uint64
	switch r.Fields[f].Type {
	case field.RGBImage:
		ptr = binary.LittleEndian.Uint64(col[field.RGBPtrOff:])
	default:
		ptr = binary.LittleEndian.Uint64(col)
	}
	return int(ptr), int(ptr) + len(heap)
}
