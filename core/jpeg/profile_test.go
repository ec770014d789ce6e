package jpeg

import (
	"fmt"
	"image"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// BenchmarkRRCStages is the loader's per-image work (RandomResizedCrop to
// 224×224 plus a random horizontal flip, from a JPEG) split into stages,
// in CPU microseconds per image on one thread:
//
//	huffman-µs/img   entropy decoding of the rows the crop needs (libjpeg
//	                 entropy-decodes every column of those rows), measured
//	                 as a decode that skips those rows instead
//	idct+colour-µs/img  the rest of the region decode: dequantise, IDCT,
//	                 chroma upsampling, YCbCr→RGB, row copies
//	resize-µs/img    INTER_AREA resize to 224×224 with the flip fused in
//	total-µs/img     decode + resize; the loader writes the result straight
//	                 into the batch, so there is no copy stage
//
// FFCV_GO_PHOTOS=DIR profiles the JPEGs under DIR (the first 512 in name
// order, e.g. bench/data/imagenet-like); otherwise the test photo.
// FFCV_GO_CROPS_OUT=FILE also writes the crops it runs, a line each (file,
// crop x0 y0 x1 y1, flip, DCT scale numerator), for bench/profile_rrc.py
// to time OpenCV's resize on the very same crops.
// FFCV_GO_SIMD=off profiles the Go resize kernels. Run with
//
//	go test ./core/jpeg -run '^$' -bench RRCStages -cpu 1 -benchtime 2000x
func BenchmarkRRCStages(b *testing.B) {
	files, paths := profilePhotos(b)
	type item struct {
		data []byte
		path string
		crop image.Rectangle
		flip bool
	}
	rng := rand.New(rand.NewPCG(21, 22))
	var items []item
	d := NewDecoder()
	defer d.Close()
	for k, data := range files {
		w, h, err := d.DecodeConfig(data)
		if err != nil {
			continue
		}
		// What a .beton at max_resolution none holds (restart markers
		// included); the source where the writer re-encodes pixels instead.
		if t, err := d.Transcode(data, 90, false); err == nil {
			data = t
		}
		for _, c := range rrcCropsRand(rng, 4, w, h) {
			items = append(items, item{data, paths[k], c, rng.IntN(2) == 0})
		}
	}
	if len(items) == 0 {
		b.Skip("no decodable photos")
	}
	const out = 224
	if name := os.Getenv("FFCV_GO_CROPS_OUT"); name != "" {
		if paths[0] == "" {
			b.Fatal("FFCV_GO_CROPS_OUT needs FFCV_GO_PHOTOS: the test photo is no file to read the crops from")
		}
		var sb strings.Builder
		for _, it := range items {
			c := it.crop
			fmt.Fprintf(&sb, "%s\t%d\t%d\t%d\t%d\t%t\t%d\n", it.path, c.Min.X, c.Min.Y, c.Max.X, c.Max.Y, it.flip,
				chooseScale(c.Dx(), c.Dy(), out, out))
		}
		if err := os.WriteFile(name, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	dst := make([]byte, out*out*3)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var huff, dec, rs int64
	i := 0
	for b.Loop() {
		it := items[i%len(items)]
		i++
		t1 := threadCPU()
		buf, err := d.decodeRegion(it.data, it.crop, out, out)
		if err != nil {
			b.Fatal(err)
		}
		t2 := threadCPU()
		m, rows := int(d.g.scale_num), int(d.g.buf_y+d.g.buf_h)
		d.resizeDecoded(dst, out, out, buf, it.crop, it.flip)
		t3 := threadCPU()
		if err := d.entropyDecode(it.data, m, rows); err != nil {
			b.Fatal(err)
		}
		huff += threadCPU() - t3
		dec += t2 - t1
		rs += t3 - t2
	}
	n := float64(b.N) * 1e3
	b.ReportMetric(float64(huff)/n, "huffman-µs/img")
	b.ReportMetric(float64(dec-huff)/n, "idct+colour-µs/img")
	b.ReportMetric(float64(rs)/n, "resize-µs/img")
	b.ReportMetric(float64(dec+rs)/n, "total-µs/img")
	b.ReportMetric(float64(b.N)*1e9/float64(dec+rs), "img/s/core")
}

// profilePhotos returns the JPEG files of $FFCV_GO_PHOTOS and their paths,
// or the test photo, which has no file (path "").
func profilePhotos(b *testing.B) ([][]byte, []string) {
	dir := os.Getenv("FFCV_GO_PHOTOS")
	if dir == "" {
		return [][]byte{loadPhoto(b).jpeg}, []string{""}
	}
	var paths []string
	_ = filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		ext := strings.ToLower(filepath.Ext(p))
		if err == nil && !e.IsDir() && (ext == ".jpg" || ext == ".jpeg") {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	paths = paths[:min(len(paths), 512)]
	var out [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	if len(out) == 0 {
		b.Fatalf("no JPEG files under %s", dir)
	}
	return out, paths
}

// rrcCropsRand draws n crops of a w×h image like torchvision's
// RandomResizedCrop (area 8-100%, aspect ratio 3/4-4/3).
func rrcCropsRand(r *rand.Rand, n, w, h int) []image.Rectangle {
	var out []image.Rectangle
	for tries := 0; len(out) < n && tries < 100*n; tries++ {
		c := rrcCrop(r, w, h)
		if !c.Empty() {
			out = append(out, c)
		}
	}
	return out
}
