package jpeg

import (
	"fmt"
	"image"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"golang.org/x/sys/unix"
)

// rrcCrops draws n crops like torchvision's RandomResizedCrop (area 8-100%,
// aspect ratio 3/4-4/3), the loader's usual training transform.
func rrcCrops(n, w, h int) []image.Rectangle {
	r := rand.New(rand.NewPCG(11, 12))
	var out []image.Rectangle
	for len(out) < n {
		if c := rrcCrop(r, w, h); !c.Empty() {
			out = append(out, c)
		}
	}
	return out
}

// rrcCrop is one try of RandomResizedCrop; empty when it does not fit.
func rrcCrop(r *rand.Rand, w, h int) image.Rectangle {
	return rrcCropArea(r, w, h, float64(w*h)*(0.08+0.92*r.Float64()))
}

type benchCase struct {
	name  string
	jpeg  []byte
	w, h  int
	crops []image.Rectangle
}

func benchCases(b *testing.B) []benchCase {
	p := loadPhoto(b)
	whole := []image.Rectangle{image.Rect(0, 0, p.w, p.h)}
	cases := []benchCase{
		{"400x300/whole", p.jpeg, p.w, p.h, whole},
		{"400x300/center256", p.jpeg, p.w, p.h, []image.Rectangle{image.Rect(72, 22, 328, 278)}},
		{"400x300/rrc", p.jpeg, p.w, p.h, rrcCrops(64, p.w, p.h)},
	}
	// A 4x bigger image, where DCT scaling kicks in for large crops.
	const bw, bh = 1600, 1200
	big := make([]byte, bw*bh*3)
	imgproc.ResizeArea(big, bw, bh, p.src, p.w, p.h, p.w*3, 3)
	bigJPEG, err := Encode(big, bw, bh, 90)
	if err != nil {
		b.Fatal(err)
	}
	cases = append(cases,
		benchCase{"1600x1200/whole", bigJPEG, bw, bh, []image.Rectangle{image.Rect(0, 0, bw, bh)}},
		benchCase{"1600x1200/rrc", bigJPEG, bw, bh, rrcCrops(64, bw, bh)})
	return cases
}

const benchOut = 224

// BenchmarkDecodeCropResize is the loader's hot path: a crop of a q90 photo
// resized to 224x224. Compare with BenchmarkDecodeThenResize.
func BenchmarkDecodeCropResize(b *testing.B) {
	for _, c := range benchCases(b) {
		b.Run(c.name, func(b *testing.B) {
			d := NewDecoder()
			defer d.Close()
			dst := make([]byte, benchOut*benchOut*3)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				crop := c.crops[i%len(c.crops)]
				i++
				if err := d.DecodeCropResize(c.jpeg, crop, benchOut, benchOut, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeThenResize is the straightforward way: decode the whole
// image, then crop and resize with imgproc.
func BenchmarkDecodeThenResize(b *testing.B) {
	for _, c := range benchCases(b) {
		b.Run(c.name, func(b *testing.B) {
			d := NewDecoder()
			defer d.Close()
			full := make([]byte, c.w*c.h*3)
			dst := make([]byte, benchOut*benchOut*3)
			var rs imgproc.Resizer
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				crop := c.crops[i%len(c.crops)]
				i++
				if _, _, err := d.Decode(c.jpeg, full); err != nil {
					b.Fatal(err)
				}
				rs.ResizeArea(dst, benchOut, benchOut, imgproc.SubRect(full, c.w*3, 3, crop),
					crop.Dx(), crop.Dy(), c.w*3, 3)
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	p := loadPhoto(b)
	b.SetBytes(int64(len(p.src)))
	for b.Loop() {
		if _, err := Encode(p.src, p.w, p.h, 90); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeScale decodes a whole q90 photo at every DCT scale m/8, the
// data behind chooseScale: the cost of a scale's IDCT against the pixels it
// saves the colour conversion and the resize.
func BenchmarkDecodeScale(b *testing.B) {
	p := loadPhoto(b)
	d := NewDecoder()
	defer d.Close()
	buf := make([]byte, p.w*p.h*3+64*p.h*3)
	for m := 1; m <= 8; m++ {
		b.Run(fmt.Sprintf("m=%d", m), func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				d.g = _Ctype_ffj_geom{scale_num: _Ctype_int(m), cx1: -1}
				if err := d.decode(p.jpeg, &d.g, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpuPerOp reports the benchmark's CPU time per operation on its own thread
// ("cpu-ns/op"), steadier than wall time on a busy machine. Use as
// defer cpuPerOp(b)() before the loop.
func cpuPerOp(b *testing.B) func() {
	runtime.LockOSThread()
	start := threadCPU()
	return func() {
		b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
		runtime.UnlockOSThread()
	}
}

// threadCPU is the CPU time of the calling thread in nanoseconds.
func threadCPU() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return ts.Nano()
}
