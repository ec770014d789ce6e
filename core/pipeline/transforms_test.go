package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Each per-sample transform is run on small synthetic images and compared
// with a straightforward reference computed here.

// newOp builds the registered operation name with args.
func newOp(t *testing.T, name string, args map[string]any) Op {
	t.Helper()
	m := map[string]any{"op": name}
	for k, v := range args {
		m[k] = v
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	mk, ok := registry[name]
	if !ok {
		t.Fatalf("operation %q is not registered", name)
	}
	op, err := mk(Env{}, raw)
	if err != nil {
		t.Fatalf("%s%v: %v", name, args, err)
	}
	return op
}

// apply runs op on img (spec in) for the sample at position pos and returns
// the output spec and bytes.
func apply(t *testing.T, op Op, in Spec, img []byte, seed, pos uint64) (Spec, []byte) {
	t.Helper()
	out, err := op.Out(in)
	if err != nil {
		t.Fatalf("Out(%v): %v", in, err)
	}
	c := NewCtx()
	c.Seed, c.Pos, c.Sample = seed, pos, pos
	dst := make([]byte, out.Bytes())
	if err := op.Run(c, 0, img, dst); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out, dst
}

func imgSpec(h, w, c int) Spec { return Spec{Shape: []int{h, w, c}, DType: "|u1"} }

// uniqueImage has a different, non-zero value at every (y, x, channel), so a
// moved pixel can be recognised (h*w*c must stay below 255).
func uniqueImage(h, w, c int) []byte {
	b := make([]byte, h*w*c)
	for i := range b {
		b[i] = byte(1 + i)
	}
	return b
}

// rampImage covers the whole uint8 range, repeatedly.
func rampImage(h, w, c int) []byte {
	b := make([]byte, h*w*c)
	for i := range b {
		b[i] = byte(i * 37)
	}
	return b
}

// shifted is the reference translation: out[y][x] = in[y+dy][x+dx] inside the
// image, fill outside.
func shifted(in []byte, h, w, c, dy, dx int, fill []byte) []byte {
	out := make([]byte, len(in))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			sy, sx := y+dy, x+dx
			d := out[(y*w+x)*c : (y*w+x+1)*c]
			if sy < 0 || sy >= h || sx < 0 || sx >= w {
				copy(d, fill)
			} else {
				copy(d, in[(sy*w+sx)*c:(sy*w+sx+1)*c])
			}
		}
	}
	return out
}

func flippedH(in []byte, h, w, c int) []byte {
	out := make([]byte, len(in))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			copy(out[(y*w+x)*c:(y*w+x+1)*c], in[(y*w+w-1-x)*c:(y*w+w-x)*c])
		}
	}
	return out
}

func flippedV(in []byte, h, w, c int) []byte {
	out := make([]byte, len(in))
	for y := 0; y < h; y++ {
		copy(out[y*w*c:(y+1)*w*c], in[(h-1-y)*w*c:(h-y)*w*c])
	}
	return out
}

func TestFlip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		h, w, c int
		p       float64
		want    func(in []byte, h, w, c int) []byte
	}{
		{"flip_h", 5, 7, 3, 1, flippedH},
		{"flip_h", 4, 6, 1, 1, flippedH},
		{"flip_h", 3, 1, 3, 1, flippedH},
		{"flip_h", 5, 7, 3, 0, func(in []byte, _, _, _ int) []byte { return in }},
		{"flip_v", 5, 7, 3, 1, flippedV},
		{"flip_v", 6, 4, 3, 1, flippedV},
		{"flip_v", 1, 5, 3, 1, flippedV},
		{"flip_v", 5, 7, 3, 0, func(in []byte, _, _, _ int) []byte { return in }},
	} {
		t.Run(fmt.Sprintf("%s_%dx%dx%d_p%v", tc.name, tc.h, tc.w, tc.c, tc.p), func(t *testing.T) {
			in := uniqueImage(tc.h, tc.w, tc.c)
			want := tc.want(in, tc.h, tc.w, tc.c)
			for pos := uint64(0); pos < 20; pos++ {
				_, got := apply(t, newOp(t, tc.name, map[string]any{"p": tc.p}), imgSpec(tc.h, tc.w, tc.c), in, 7, pos)
				if !slices.Equal(got, want) {
					t.Fatalf("sample %d: got %v, want %v", pos, got, want)
				}
			}
		})
	}
}

// TestFlipInPlace runs the flip with the same buffer as input and output, as
// a fused program does.
func TestFlipInPlace(t *testing.T) {
	in := uniqueImage(5, 7, 3)
	buf := slices.Clone(in)
	op := newOp(t, "flip_h", map[string]any{"p": 1.0})
	op.Out(imgSpec(5, 7, 3))
	if err := op.Run(NewCtx(), 0, buf, buf); err != nil {
		t.Fatal(err)
	}
	if want := flippedH(in, 5, 7, 3); !slices.Equal(buf, want) {
		t.Fatalf("in place: got %v, want %v", buf, want)
	}
}

func TestFlipHalfTheTime(t *testing.T) {
	in := uniqueImage(3, 4, 3)
	flipped := 0
	const n = 2000
	for pos := uint64(0); pos < n; pos++ {
		_, got := apply(t, newOp(t, "flip_h", map[string]any{"p": 0.5}), imgSpec(3, 4, 3), in, 1, pos)
		switch {
		case slices.Equal(got, in):
		case slices.Equal(got, flippedH(in, 3, 4, 3)):
			flipped++
		default:
			t.Fatalf("sample %d: neither the image nor its mirror", pos)
		}
	}
	if flipped < n*4/10 || flipped > n*6/10 {
		t.Fatalf("p=0.5 flipped %d of %d", flipped, n)
	}
}

func TestTranslate(t *testing.T) {
	const h, w, c = 5, 7, 3
	in := uniqueImage(h, w, c)
	for _, tc := range []struct {
		padding int
		fill    []int
	}{{0, []int{0, 0, 0}}, {1, []int{0, 0, 0}}, {2, []int{250, 251, 252}}, {4, []int{0, 0, 0}}, {9, []int{0, 0, 0}}} {
		t.Run(fmt.Sprintf("padding%d", tc.padding), func(t *testing.T) {
			fill := FillBytes(tc.fill)
			seen := map[[2]int]bool{}
			for pos := uint64(0); pos < 400; pos++ {
				op := newOp(t, "translate", map[string]any{"padding": tc.padding, "fill": tc.fill})
				_, got := apply(t, op, imgSpec(h, w, c), in, 3, pos)
				found := false
				for dy := -tc.padding; dy <= tc.padding && !found; dy++ {
					for dx := -tc.padding; dx <= tc.padding && !found; dx++ {
						if slices.Equal(got, shifted(in, h, w, c, dy, dx, fill)) {
							found = true
							seen[[2]int{dy, dx}] = true
						}
					}
				}
				if !found {
					t.Fatalf("sample %d: output is no shift by up to %d pixels: %v", pos, tc.padding, got)
				}
				if tc.padding == 0 && !slices.Equal(got, in) {
					t.Fatalf("padding 0 is not the identity")
				}
			}
			if n := (2*tc.padding + 1) * (2*tc.padding + 1); tc.padding <= 2 && len(seen) != n {
				t.Fatalf("saw %d of the %d shifts", len(seen), n)
			}
		})
	}
}

func TestCutout(t *testing.T) {
	const h, w, c = 6, 8, 3
	in := uniqueImage(h, w, c)
	for _, size := range []int{1, 3, 6} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			corners := map[[2]int]bool{}
			for pos := uint64(0); pos < 300; pos++ {
				_, got := apply(t, newOp(t, "cutout", map[string]any{"size": size, "fill": []int{0, 0, 0}}), imgSpec(h, w, c), in, 5, pos)
				// The filled pixels must form one size×size square inside the image.
				y0, x0, y1, x1, n := h, w, -1, -1, 0
				for y := 0; y < h; y++ {
					for x := 0; x < w; x++ {
						px := got[(y*w+x)*c : (y*w+x+1)*c]
						if slices.Equal(px, []byte{0, 0, 0}) {
							n++
							y0, x0, y1, x1 = min(y0, y), min(x0, x), max(y1, y), max(x1, x)
						} else if !slices.Equal(px, in[(y*w+x)*c:(y*w+x+1)*c]) {
							t.Fatalf("sample %d: pixel (%d, %d) changed to %v outside the cutout", pos, y, x, px)
						}
					}
				}
				if n != size*size || y1-y0+1 != size || x1-x0+1 != size {
					t.Fatalf("sample %d: %d filled pixels in [%d..%d]x[%d..%d], want a %dx%d square", pos, n, y0, y1, x0, x1, size, size)
				}
				corners[[2]int{y0, x0}] = true
			}
			if want := (h - size + 1) * (w - size + 1); len(corners) != want {
				t.Fatalf("saw %d of the %d square positions", len(corners), want)
			}
		})
	}
	if _, err := newOp(t, "cutout", map[string]any{"size": 9, "fill": []int{0, 0, 0}}).Out(imgSpec(h, w, c)); err == nil {
		t.Fatal("a cutout larger than the image was accepted")
	}
}

// blendRef is FFCV's colour jitter: with probability p, blend the image with
// black / its mean luma / its luma by f ~ U(max(0, 1-m), 1+m), clip, truncate.
func blendRef(kind string, in []byte, m, p float64, seed, pos uint64) []byte {
	c := NewCtx()
	c.Seed, c.Pos = seed, pos
	r := c.Rand(0)
	out := slices.Clone(in)
	if r.Float64() >= p {
		return out
	}
	lo := math.Max(0, 1-m)
	f := lo + float64(r.Float64()*(1+m-lo))
	clip := func(v float64) byte { return byte(math.Min(255, math.Max(0, v))) }
	luma := func(i int) float64 {
		// FFCV's grey: (0.2989 r + 0.587 g + 0.114 b).astype(uint8).
		return math.Trunc(float64(0.2989*float64(in[i])) + float64(0.587*float64(in[i+1])) + float64(0.114*float64(in[i+2])))
	}
	switch kind {
	case "brightness":
		for i, v := range in {
			out[i] = clip(float64(v) * f)
		}
	case "contrast":
		mean := 0.0
		for i := 0; i < len(in); i += 3 {
			mean += luma(i)
		}
		mean /= float64(len(in) / 3)
		for i, v := range in {
			out[i] = clip(float64(f*float64(v)) + float64((1-f)*mean))
		}
	case "saturation":
		for i := 0; i < len(in); i += 3 {
			g := luma(i)
			for k := 0; k < 3; k++ {
				out[i+k] = clip(float64(f*float64(in[i+k])) + float64((1-f)*g))
			}
		}
	}
	return out
}

func TestColourJitter(t *testing.T) {
	const h, w, c = 6, 9, 3
	in := rampImage(h, w, c)
	for _, kind := range []string{"brightness", "contrast", "saturation"} {
		for _, tc := range []struct{ m, p float64 }{{0, 1}, {0.4, 1}, {3, 1}, {0.9, 0.5}, {0.9, 0}} {
			t.Run(fmt.Sprintf("%s_m%v_p%v", kind, tc.m, tc.p), func(t *testing.T) {
				saturated := false
				for pos := uint64(0); pos < 50; pos++ {
					op := newOp(t, kind, map[string]any{"magnitude": tc.m, "p": tc.p})
					_, got := apply(t, op, imgSpec(h, w, c), in, 11, pos)
					if tc.m == 0 || tc.p == 0 {
						if !slices.Equal(got, in) {
							t.Fatalf("sample %d: magnitude %v, p %v is not the identity", pos, tc.m, tc.p)
						}
						continue
					}
					want := blendRef(kind, in, tc.m, tc.p, 11, pos)
					if !slices.Equal(got, want) {
						t.Fatalf("sample %d: got %v, want %v", pos, got, want)
					}
					saturated = saturated || slices.Contains(got, 255) && !slices.Equal(got, in)
				}
				if tc.m >= 3 && !saturated {
					t.Fatal("a magnitude of 3 never clipped at 255")
				}
			})
		}
	}
}

// TestBrightnessClips checks clipping on its own: a factor above 1 must
// saturate bright pixels at 255, never wrap around.
func TestBrightnessClips(t *testing.T) {
	in := []byte{0, 1, 100, 128, 200, 254, 255, 255, 255}
	for pos := uint64(0); pos < 100; pos++ {
		_, got := apply(t, newOp(t, "brightness", map[string]any{"magnitude": 5.0, "p": 1.0}), imgSpec(1, 3, 3), in, 2, pos)
		for i := 1; i < len(in); i++ {
			if in[i-1] <= in[i] && got[i-1] > got[i] {
				t.Fatalf("sample %d: not monotonic (wrapped?): %v -> %v", pos, in, got)
			}
		}
		if got[0] != 0 {
			t.Fatalf("black became %d", got[0])
		}
	}
}

func TestGrayscale(t *testing.T) {
	in := rampImage(4, 5, 3)
	for _, p := range []float64{0, 1} {
		_, got := apply(t, newOp(t, "grayscale", map[string]any{"p": p}), imgSpec(4, 5, 3), in, 1, 0)
		want := slices.Clone(in)
		if p == 1 {
			for i := 0; i < len(in); i += 3 {
				g := byte(float64(0.299*float64(in[i])) + float64(0.587*float64(in[i+1])) + float64(0.114*float64(in[i+2])))
				want[i], want[i+1], want[i+2] = g, g, g
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("p=%v: got %v, want %v", p, got, want)
		}
	}
	if _, err := newOp(t, "grayscale", map[string]any{"p": 1.0}).Out(imgSpec(4, 5, 1)); err == nil {
		t.Fatal("grayscale accepted a one-channel image")
	}
}

func TestSolarize(t *testing.T) {
	in := make([]byte, 256*3)
	for i := range in {
		in[i] = byte(i / 3)
	}
	for _, tc := range []struct {
		threshold int
		p         float64
	}{{128, 1}, {0, 1}, {255, 1}, {256, 1}, {128, 0}} {
		_, got := apply(t, newOp(t, "solarize", map[string]any{"threshold": tc.threshold, "p": tc.p}), imgSpec(16, 16, 3), in, 1, 0)
		for i, v := range in {
			want := v
			if tc.p == 1 && int(v) >= tc.threshold {
				want = 255 - v
			}
			if got[i] != want {
				t.Fatalf("threshold %d: %d -> %d, want %d", tc.threshold, v, got[i], want)
			}
		}
	}
}

// window is the reference crop: out[y][x] = in[top+y][left+x], zero outside.
func window(in []byte, h, w, c, top, left, oh, ow int) []byte {
	out := make([]byte, oh*ow*c)
	for y := 0; y < oh; y++ {
		for x := 0; x < ow; x++ {
			sy, sx := top+y, left+x
			if sy >= 0 && sy < h && sx >= 0 && sx < w {
				copy(out[(y*ow+x)*c:], in[(sy*w+sx)*c:(sy*w+sx+1)*c])
			}
		}
	}
	return out
}

func TestRandomCrop(t *testing.T) {
	const h, w, c = 6, 8, 3
	in := uniqueImage(h, w, c)
	for _, tc := range []struct{ oh, ow, padding int }{{6, 8, 0}, {4, 5, 0}, {6, 8, 2}, {3, 3, 1}, {10, 12, 2}} {
		t.Run(fmt.Sprintf("%dx%d_pad%d", tc.oh, tc.ow, tc.padding), func(t *testing.T) {
			seen := map[[2]int]bool{}
			for pos := uint64(0); pos < 300; pos++ {
				op := newOp(t, "random_crop", map[string]any{"size": []int{tc.oh, tc.ow}, "padding": tc.padding})
				out, got := apply(t, op, imgSpec(h, w, c), in, 9, pos)
				if !slices.Equal(out.Shape, []int{tc.oh, tc.ow, c}) {
					t.Fatalf("output shape %v", out.Shape)
				}
				found := false
				for top := -tc.padding; top <= h+tc.padding-tc.oh && !found; top++ {
					for left := -tc.padding; left <= w+tc.padding-tc.ow && !found; left++ {
						if slices.Equal(got, window(in, h, w, c, top, left, tc.oh, tc.ow)) {
							found = true
							seen[[2]int{top, left}] = true
						}
					}
				}
				if !found {
					t.Fatalf("sample %d: output is no window of the padded image", pos)
				}
			}
			if want := (h + 2*tc.padding - tc.oh + 1) * (w + 2*tc.padding - tc.ow + 1); len(seen) != want {
				t.Fatalf("saw %d of %d windows", len(seen), want)
			}
		})
	}
	if _, err := newOp(t, "random_crop", map[string]any{"size": []int{7, 8}, "padding": 0}).Out(imgSpec(h, w, c)); err == nil {
		t.Fatal("a crop larger than the image was accepted")
	}
}

// ---- float16 ----------------------------------------------------------------

// halfTable holds the value of every finite non-negative half, by bit pattern.
var halfTable = func() []float64 {
	t := make([]float64, 0x7c00)
	for b := range t {
		e, m := b>>10, float64(b&0x3ff)
		if e == 0 {
			t[b] = m * math.Pow(2, -24)
		} else {
			t[b] = (1 + m/1024) * math.Pow(2, float64(e-15))
		}
	}
	return t
}()

// halfRef rounds x to the nearest half, ties to the even pattern, by search.
func halfRef(x float64) uint16 {
	var sign uint16
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	switch {
	case math.IsNaN(x):
		return 0x7e00
	case x >= 65520: // 65504 + half an ulp (16): ties go to the even "65536", i.e. inf
		return sign | 0x7c00
	}
	i, _ := slices.BinarySearch(halfTable, x)
	if i == len(halfTable) {
		return sign | 0x7bff
	}
	if halfTable[i] == x || i == 0 {
		return sign | uint16(i)
	}
	lo, hi := halfTable[i-1], halfTable[i]
	switch {
	case x-lo < hi-x:
		return sign | uint16(i-1)
	case x-lo > hi-x:
		return sign | uint16(i)
	case (i-1)%2 == 0:
		return sign | uint16(i-1)
	}
	return sign | uint16(i)
}

func checkHalf(t *testing.T, f float32) {
	t.Helper()
	got, want := float16(f), halfRef(float64(f))
	if math.IsNaN(float64(f)) {
		if got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
			t.Fatalf("float16(NaN) = %#04x, not a NaN", got)
		}
		return
	}
	if got != want {
		t.Fatalf("float16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
	}
}

func TestFloat16Tricky(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, f := range []float32{
		0, float32(math.Copysign(0, -1)), 1, -1, 0.5, 2048, 2049, 2050, 2051, 4097, 0.1, 1.0 / 3,
		65504, 65505, 65519, 65519.996, 65520, 65536, -65520, 1e10, -1e10, inf, -inf, float32(math.NaN()),
		// subnormals of float16: 2^-24 is the smallest, 2^-25 a tie with zero
		float32(math.Pow(2, -24)), float32(math.Pow(2, -25)), math.Nextafter32(float32(math.Pow(2, -25)), 1),
		math.Nextafter32(float32(math.Pow(2, -25)), 0), float32(3 * math.Pow(2, -25)), float32(5 * math.Pow(2, -25)),
		float32(math.Pow(2, -26)), float32(math.Pow(2, -14)), float32(math.Pow(2, -14) - math.Pow(2, -25)),
		float32(math.Pow(2, -14) - math.Pow(2, -24)), float32(1023.5 * math.Pow(2, -24)), float32(1022.5 * math.Pow(2, -24)),
		// float32 subnormals and tiny normals
		math.Float32frombits(1), math.Float32frombits(0x007fffff), math.Float32frombits(0x00800000), 1e-30,
		// rounding to the next binade (mantissa carry)
		2047.5, 2047.75, 1.99951171875, 1.999755859375, 1.9998779296875,
	} {
		checkHalf(t, f)
		checkHalf(t, -f)
	}
}

// TestFloat16AllHalves checks every half, the midpoints between neighbours
// (ties to even) and their float32 neighbours.
func TestFloat16AllHalves(t *testing.T) {
	for b := 0; b < 0x7c00; b++ {
		v := float32(halfTable[b])
		checkHalf(t, v)
		checkHalf(t, math.Nextafter32(v, 0))
		checkHalf(t, math.Nextafter32(v, float32(math.Inf(1))))
		next := 65536.0
		if b+1 < len(halfTable) {
			next = halfTable[b+1]
		}
		mid := float32((halfTable[b] + next) / 2) // exact: 12 significant bits
		checkHalf(t, mid)
		checkHalf(t, -mid)
		checkHalf(t, math.Nextafter32(mid, 0))
		checkHalf(t, math.Nextafter32(mid, float32(math.Inf(1))))
	}
}

func TestFloat16Random(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300000; i++ {
		checkHalf(t, math.Float32frombits(r.Uint32()))
		// and values in the half range, where rounding matters
		checkHalf(t, float32((r.Float64()*2-1)*70000))
	}
}

// TestFloat16Of64 checks the single rounding from float64, including values
// just off a midpoint by less than a float32 ulp, where rounding to float32
// first and then to float16 would land on the tie and go the wrong way.
func TestFloat16Of64(t *testing.T) {
	check := func(x float64) {
		t.Helper()
		if got, want := float16of64(x), halfRef(x); got != want {
			t.Fatalf("float16of64(%v) = %#04x, want %#04x", x, got, want)
		}
	}
	for b := 0; b < 0x7c00; b++ {
		next := 65536.0
		if b+1 < len(halfTable) {
			next = halfTable[b+1]
		}
		mid := (halfTable[b] + next) / 2
		for _, x := range []float64{halfTable[b], mid, mid * (1 + 1e-12), mid * (1 - 1e-12), mid + 1e-300} {
			check(x)
			check(-x)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300000; i++ {
		check((r.Float64()*2 - 1) * 70000)
		check(math.Ldexp(r.Float64(), -r.IntN(40)))
	}
	for _, x := range []float64{0, 1e-320, math.MaxFloat64, math.Inf(1), math.Inf(-1), 65519.999999, 65520} {
		check(x)
	}
}

// ---- normalize -----------------------------------------------------------------

func TestNormalize(t *testing.T) {
	// ImageNet's, as float64: the table is computed from the values as given.
	mean := []float64{0.485 * 255, 0.456 * 255, 0.406 * 255}
	std := []float64{0.229 * 255, 0.224 * 255, 0.225 * 255}
	in := make([]byte, 256*3)
	for i := range in {
		in[i] = byte(i / 3)
	}
	spec := imgSpec(16, 16, 3)
	for _, dt := range []string{"<f4", "<f2"} {
		t.Run(dt, func(t *testing.T) {
			out, got := apply(t, newOp(t, "normalize", map[string]any{"mean": mean, "std": std, "dtype": dt}), spec, in, 0, 0)
			if out.DType != dt || !slices.Equal(out.Shape, spec.Shape) {
				t.Fatalf("output %v", out)
			}
			for i, v := range in {
				k := i % 3
				// (x - mean) / std, computed exactly enough and rounded once.
				ref := (float64(v) - mean[k]) / std[k]
				if dt == "<f4" {
					g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:]))
					if g != float32(ref) {
						t.Fatalf("x=%d channel %d: %v, want %v", v, k, g, float32(ref))
					}
				} else if g := binary.LittleEndian.Uint16(got[2*i:]); g != halfRef(ref) {
					t.Fatalf("x=%d channel %d: %#04x, want %#04x (%v)", v, k, g, halfRef(ref), ref)
				}
			}
		})
	}
	for _, args := range []map[string]any{
		{"mean": []float32{0, 0}, "std": []float32{1}, "dtype": "<f4"},
		{"mean": []float32{0}, "std": []float32{0}, "dtype": "<f4"},
		{"mean": []float32{0}, "std": []float32{1}, "dtype": "<f8"},
	} {
		raw, _ := json.Marshal(args)
		if _, err := newNormalize(Env{}, raw); err == nil {
			t.Errorf("normalize%v accepted", args)
		}
	}
}

// ---- labels and poison ---------------------------------------------------------

func TestReplaceLabel(t *testing.T) {
	op := newOp(t, "replace_label", map[string]any{"indices": []int{2, 5}, "label": -7})
	spec := Spec{Shape: []int{1}, DType: "<i8"}
	for id := uint64(0); id < 8; id++ {
		in := binary.LittleEndian.AppendUint64(nil, 100+id)
		_, got := apply(t, op, spec, in, 0, id)
		want := int64(100 + id)
		if id == 2 || id == 5 {
			want = -7
		}
		if g := int64(binary.LittleEndian.Uint64(got)); g != want {
			t.Fatalf("sample %d: label %d, want %d", id, g, want)
		}
	}
	if _, err := op.Out(Spec{Shape: []int{1}, DType: "<f8"}); err == nil {
		t.Fatal("replace_label accepted float labels")
	}
}

func TestPoison(t *testing.T) {
	const h, w, c = 3, 4, 3
	in := rampImage(h, w, c)
	mask := make([]float32, h*w*c)
	for i := range mask {
		mask[i] = float32(i*29%300) - 20 // some outside [0, 255]
	}
	op := newOp(t, "poison", map[string]any{"mask": mask, "alpha": 0.25, "indices": []int{1}, "clamp": []float32{10, 240}})
	for id := uint64(0); id < 3; id++ {
		_, got := apply(t, op, imgSpec(h, w, c), in, 0, id)
		for i, v := range in {
			want := v
			if id == 1 {
				f := float64(0.75*float64(v)) + float64(0.25*float64(mask[i]))
				want = byte(math.Min(240, math.Max(10, f)))
			}
			if got[i] != want {
				t.Fatalf("sample %d, byte %d: %d, want %d", id, i, got[i], want)
			}
		}
	}
}

// FFCV's Poison takes one alpha per pixel (an H×W array), shared by the channels.
func TestPoisonPerPixelAlpha(t *testing.T) {
	const h, w, c = 3, 4, 3
	in := rampImage(h, w, c)
	mask := make([]float32, h*w*c)
	alpha := make([]float32, h*w)
	for i := range mask {
		mask[i] = float32(i * 23 % 256)
	}
	for i := range alpha {
		alpha[i] = float32(i) / float32(h*w-1)
	}
	op := newOp(t, "poison", map[string]any{"mask": mask, "alpha_map": alpha, "indices": []int{0}, "clamp": []float32{0, 255}})
	_, got := apply(t, op, imgSpec(h, w, c), in, 0, 0)
	for i, v := range in {
		a := alpha[i/c]
		want := byte(math.Min(255, math.Max(0, float64(float32((1-a)*float32(v))+float32(a*mask[i])))))
		if got[i] != want {
			t.Fatalf("byte %d: %d, want %d", i, got[i], want)
		}
	}
	bad := newOp(t, "poison", map[string]any{"mask": mask, "alpha_map": alpha[:5], "indices": []int{0}})
	if _, err := bad.Out(imgSpec(h, w, c)); err == nil {
		t.Fatal("an alpha map of the wrong size was accepted")
	}
}

// ---- mixup ------------------------------------------------------------------------

func newBatchOp(t *testing.T, name string, args map[string]any) BatchOp {
	t.Helper()
	raw, _ := json.Marshal(args)
	op, err := batchRegistry[name](raw)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func TestMixupConsistency(t *testing.T) {
	const n, h, w, c = 6, 2, 3, 3
	imgs := make([]byte, n*h*w*c)
	for i := range imgs {
		imgs[i] = byte(i * 53)
	}
	labels := make([]byte, 8*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(labels[8*i:], uint64(10+i))
	}
	sz := h * w * c
	for _, same := range []bool{true, false} {
		for _, alpha := range []float64{0.2, 1, 5} {
			args := map[string]any{"alpha": alpha, "same_lambda": same}
			im, lb := newBatchOp(t, "image_mixup", args), newBatchOp(t, "label_mixup", args)
			if _, err := im.Out(imgSpec(h, w, c)); err != nil {
				t.Fatal(err)
			}
			if out, err := lb.Out(Spec{Shape: []int{1}, DType: "<i8"}); err != nil || out.Bytes() != 12 {
				t.Fatalf("label mixup output %v, %v", out, err)
			}
			bc := &BatchCtx{Seed: 3, Epoch: 1, Index: 4}
			gotI, gotL := make([]byte, len(imgs)), make([]byte, 12*n)
			if err := im.RunBatch(bc, imgs, gotI, n); err != nil {
				t.Fatal(err)
			}
			if err := lb.RunBatch(bc, labels, gotL, n); err != nil {
				t.Fatal(err)
			}
			lams := lambdas(bc, alpha, same, n)
			for i := 0; i < n; i++ {
				j := (i + n - 1) % n
				row := gotL[12*i:]
				y := math.Float32frombits(binary.LittleEndian.Uint32(row))
				yp := math.Float32frombits(binary.LittleEndian.Uint32(row[4:]))
				lam := math.Float32frombits(binary.LittleEndian.Uint32(row[8:]))
				if y != float32(10+i) || yp != float32(10+j) {
					t.Fatalf("sample %d: labels [%v %v], want [%d %d]", i, y, yp, 10+i, 10+j)
				}
				if lam != float32(lams[i]) || lam < 0 || lam > 1 {
					t.Fatalf("sample %d: label lambda %v, image lambda %v", i, lam, lams[i])
				}
				if same && lams[i] != lams[0] {
					t.Fatalf("same_lambda: lambdas differ: %v", lams)
				}
				for k := 0; k < sz; k++ {
					a, p := float64(imgs[i*sz+k]), float64(imgs[j*sz+k])
					want := byte(math.Min(255, float64(lams[i]*a)+float64((1-lams[i])*p)))
					if gotI[i*sz+k] != want {
						t.Fatalf("sample %d byte %d: %d, want %d (λ=%v)", i, k, gotI[i*sz+k], want, lams[i])
					}
				}
			}
			if !same && slices.Min(lams) == slices.Max(lams) {
				t.Fatalf("independent lambdas are all equal: %v", lams)
			}
			// The same batch gets the same lambdas; another batch others.
			if again := lambdas(bc, alpha, same, n); !slices.Equal(again, lams) {
				t.Fatal("lambdas are not a function of (seed, epoch, batch)")
			}
			other := lambdas(&BatchCtx{Seed: 3, Epoch: 1, Index: 5}, alpha, same, n)
			if slices.Equal(other, lams) {
				t.Fatal("two batches drew the same lambdas")
			}
		}
	}
}

// ---- crops -------------------------------------------------------------------------

func TestRandomResizedCropInside(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 20000; i++ {
		w, h := 1+r.IntN(300), 1+r.IntN(300)
		if i%7 == 0 {
			w = 1 + r.IntN(3)
		}
		s0 := 0.01 + r.Float64()*0.99
		scale := [2]float64{s0, s0 + r.Float64()*(1.2-s0)}
		r0 := 0.2 + r.Float64()*2
		ratio := [2]float64{r0, r0 * (1 + r.Float64()*3)}
		rect := RandomResizedCrop(r, w, h, scale, ratio)
		if rect.Empty() || rect.Min.X < 0 || rect.Min.Y < 0 || rect.Max.X > w || rect.Max.Y > h {
			t.Fatalf("%dx%d scale %v ratio %v: crop %v outside the image", w, h, scale, ratio, rect)
		}
	}
}

func TestRandomResizedCropFallback(t *testing.T) {
	for _, tc := range []struct {
		w, h         int
		scale, ratio [2]float64
		want         image.Rectangle
	}{
		// image aspect 2 below the ratio range: full width, height w/ratio[0], centred
		{20, 10, [2]float64{1, 1}, [2]float64{2.5, 3}, image.Rect(0, 1, 20, 9)},
		// image aspect 0.5 above the range: full height, width h·ratio[1], centred
		{10, 20, [2]float64{1, 1}, [2]float64{0.1, 0.25}, image.Rect(2, 0, 7, 20)},
		// aspect inside the range but no try can fit (area > image): whole image
		{20, 10, [2]float64{1.5, 2}, [2]float64{1.9, 2.1}, image.Rect(0, 0, 20, 10)},
		{7, 7, [2]float64{2, 3}, [2]float64{0.75, 4.0 / 3}, image.Rect(0, 0, 7, 7)},
	} {
		for seed := uint64(0); seed < 20; seed++ {
			got := RandomResizedCrop(rand.New(rand.NewPCG(seed, 0)), tc.w, tc.h, tc.scale, tc.ratio)
			if got != tc.want {
				t.Fatalf("%dx%d scale %v ratio %v: %v, want %v", tc.w, tc.h, tc.scale, tc.ratio, got, tc.want)
			}
		}
	}
}

func TestCenterCrop(t *testing.T) {
	for _, tc := range []struct {
		w, h  int
		ratio float64
		want  image.Rectangle
	}{
		{100, 50, 0.875, image.Rect(28, 3, 71, 46)}, // c = int(43.75) = 43, at (57/2, 7/2)
		{50, 100, 1, image.Rect(0, 25, 50, 75)},
		{1, 1, 0.5, image.Rect(0, 0, 1, 1)},
	} {
		if got := CenterCrop(tc.w, tc.h, tc.ratio); got != tc.want {
			t.Errorf("CenterCrop(%d, %d, %v) = %v, want %v", tc.w, tc.h, tc.ratio, got, tc.want)
		}
	}
}

// TestRRCTransformRaw checks the RandomResizedCrop transform keeps the shape
// and that a crop of a constant image stays constant.
func TestRRCTransformConstant(t *testing.T) {
	in := make([]byte, 40*30*3)
	for i := range in {
		in[i] = 77
	}
	op := newOp(t, "rrc", map[string]any{"size": []int{8, 12}, "scale": []float64{0.08, 1}, "ratio": []float64{0.75, 4.0 / 3}})
	for pos := uint64(0); pos < 20; pos++ {
		out, got := apply(t, op, imgSpec(30, 40, 3), in, 1, pos)
		if !slices.Equal(out.Shape, []int{8, 12, 3}) {
			t.Fatalf("shape %v", out.Shape)
		}
		for _, v := range got {
			if v != 77 {
				t.Fatalf("sample %d: constant image resized to %d", pos, v)
			}
		}
	}
}

// ---- determinism ----------------------------------------------------------------------

func TestCtxRandDeterministic(t *testing.T) {
	draws := func(c *Ctx, op int) []uint64 {
		r := c.Rand(op)
		return []uint64{r.Uint64(), r.Uint64(), r.Uint64()}
	}
	a, b := NewCtx(), NewCtx()
	for _, k := range []struct{ seed, epoch, pos uint64 }{{0, 0, 0}, {1, 0, 0}, {1, 2, 3}, {1, 2, 1 << 40}} {
		a.Seed, a.Epoch, a.Pos = k.seed, k.epoch, k.pos
		// b has seen other samples first: history must not matter.
		b.Seed, b.Epoch, b.Pos = 99, 99, 99
		draws(b, 1)
		b.Seed, b.Epoch, b.Pos = k.seed, k.epoch, k.pos
		for op := 0; op < 4; op++ {
			x, y := draws(a, op), draws(b, op)
			if !slices.Equal(x, y) {
				t.Fatalf("%+v op %d: %v != %v", k, op, x, y)
			}
			if z := draws(a, op); !slices.Equal(x, z) {
				t.Fatalf("%+v op %d: a second Rand gave %v, then %v", k, op, x, z)
			}
		}
	}
	// Different operations, positions, epochs and seeds draw differently.
	key := func(seed, epoch, pos uint64, op int) uint64 {
		a.Seed, a.Epoch, a.Pos = seed, epoch, pos
		return a.Rand(op).Uint64()
	}
	seen := map[uint64]string{}
	for seed := uint64(0); seed < 3; seed++ {
		for epoch := uint64(0); epoch < 3; epoch++ {
			for pos := uint64(0); pos < 20; pos++ {
				for op := 0; op < 3; op++ {
					v := key(seed, epoch, pos, op)
					name := fmt.Sprint(seed, epoch, pos, op)
					if prev, dup := seen[v]; dup {
						t.Fatalf("keys %s and %s draw the same value", prev, name)
					}
					seen[v] = name
				}
			}
		}
	}
}

// TestProgramRun builds a fused program without a file (decoder-free stages
// fed by a fake decoder) and checks it equals running the stages one by one.
func TestProgramRunMatchesStages(t *testing.T) {
	const h, w, c = 6, 8, 3
	src := uniqueImage(h, w, c)
	ops := []Op{
		fakeDecoder{imgSpec(h, w, c), src},
		newOp(t, "flip_h", map[string]any{"p": 0.5}),
		newOp(t, "translate", map[string]any{"padding": 2, "fill": []int{0, 0, 0}}),
		newOp(t, "cutout", map[string]any{"size": 2, "fill": []int{9, 9, 9}}),
		newOp(t, "brightness", map[string]any{"magnitude": 0.5, "p": 0.5}),
		newOp(t, "random_crop", map[string]any{"size": []int{4, 4}, "padding": 1}),
		newOp(t, "normalize", map[string]any{"mean": []float32{1, 2, 3}, "std": []float32{4, 5, 6}, "dtype": "<f2"}),
	}
	p := &Program{}
	var in Spec
	for i, op := range ops {
		out, err := op.Out(in)
		if err != nil {
			t.Fatal(err)
		}
		p.ops, p.specs, p.names = append(p.ops, op), append(p.specs, out), append(p.names, fmt.Sprint(i))
		p.keys = append(p.keys, i)
		in = out
	}
	p.Out, p.SampleOut = in, in
	p.planDirect()
	var s Scratch
	for pos := uint64(0); pos < 30; pos++ {
		c := NewCtx()
		c.Seed, c.Pos = 4, pos
		got := make([]byte, p.Out.Bytes())
		if err := p.Run(c, &s, nil, got); err != nil {
			t.Fatal(err)
		}
		var cur []byte
		for i, op := range ops {
			dst := make([]byte, p.specs[i].Bytes())
			if err := op.Run(c, i, cur, dst); err != nil {
				t.Fatal(err)
			}
			cur = dst
		}
		if !slices.Equal(got, cur) {
			t.Fatalf("sample %d: fused program differs from the stages run one by one", pos)
		}
	}
}

type fakeDecoder struct {
	spec Spec
	img  []byte
}

func (d fakeDecoder) Out(Spec) (Spec, error) { return d.spec, nil }
func (d fakeDecoder) Run(_ *Ctx, _ int, _, out []byte) error {
	copy(out, d.img)
	return nil
}

// TestUnknownArgument: every operation rejects an argument it does not
// declare ({"op": "flip_h", "prob": 1} must not silently never flip).
func TestUnknownArgument(t *testing.T) {
	raw := func(name string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"op": name, "prob": 1})
		return b
	}
	for name, mk := range registry {
		t.Run(name, func(t *testing.T) {
			_, err := mk(Env{}, raw(name))
			if err == nil || !strings.Contains(err.Error(), `unknown field "prob"`) {
				t.Fatalf("got %v, want an unknown-field error", err)
			}
		})
	}
	for name, mk := range batchRegistry {
		t.Run(name, func(t *testing.T) {
			_, err := mk(raw(name))
			if err == nil || !strings.Contains(err.Error(), `unknown field "prob"`) {
				t.Fatalf("got %v, want an unknown-field error", err)
			}
		})
	}
}
