package jpeg

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// viewSets are the view layouts the tests decode, for a w×h image: crops
// that overlap, are disjoint, nested, at the edges, the same crop at every
// DCT scale, and DINO's 2 global + 8 local crops; flips alternate.
func viewSets(w, h int) map[string][]View {
	v := func(x0, y0, x1, y1, ow, oh int) View {
		return View{Crop: image.Rect(x0, y0, x1, y1), W: ow, H: oh}
	}
	sets := map[string][]View{
		"overlapping": {v(0, 0, w*2/3, h*2/3, 64, 48), v(w/3, h/3, w, h, 64, 48), v(w/4, h/5, w*3/4, h*4/5, 224, 224)},
		"disjoint":    {v(0, 0, w/3, h/3, 32, 32), v(w*2/3, h*2/3, w, h, 48, 40), v(w/2, 0, w, h/4, 20, 10)},
		"nested":      {v(0, 0, w, h, 96, 72), v(w/4, h/4, w*3/4, h*3/4, 96, 96), v(w/3, h/3, w/3+9, h/3+7, 5, 3)},
		"edges": {v(w-1, h-1, w, h, 1, 1), v(0, 0, 1, 1, 3, 3), v(w-40, 0, w, h, 16, 64),
			v(0, h-17, w, h, 224, 24), v(0, 0, w, h, w/8, h/8), v(w-33, h-33, w, h, 33, 33)},
	}
	for _, out := range []int{224, 64, 40, 25, 8} { // scales 8, 4, 3, 2, 1 for a crop of 200 or more
		sets["scales"] = append(sets["scales"], v(w/8, h/8, w/8+min(w, h)*3/4, h/8+min(w, h)*3/4, out, out))
	}
	rng := rand.New(rand.NewPCG(3, uint64(w*h)))
	sets["dino"] = append(dinoViews(rng, w, h, 2, 0.4, 1, 224), dinoViews(rng, w, h, 8, 0.05, 0.4, 96)...)
	for _, vs := range sets {
		for i := range vs {
			vs[i].Flip = i%2 == 1
			vs[i].Dst = make([]byte, vs[i].W*vs[i].H*3)
		}
	}
	return sets
}

// dinoViews draws n RandomResizedCrop views of area scale lo..hi, out×out.
func dinoViews(r *rand.Rand, w, h, n int, lo, hi float64, out int) []View {
	var vs []View
	for len(vs) < n {
		area := float64(w*h) * (lo + (hi-lo)*r.Float64())
		c := rrcCropArea(r, w, h, area)
		if !c.Empty() {
			vs = append(vs, View{Crop: c, W: out, H: out, Dst: make([]byte, out*out*3)})
		}
	}
	return vs
}

// rrcCropArea is one try of RandomResizedCrop at the given area (aspect
// ratio 3/4-4/3); empty when it does not fit.
func rrcCropArea(r *rand.Rand, w, h int, area float64) image.Rectangle {
	ratio := math.Exp(math.Log(3.0/4) + r.Float64()*math.Log(16.0/9))
	cw := int(math.Round(math.Sqrt(area * ratio)))
	ch := int(math.Round(math.Sqrt(area / ratio)))
	if cw < 1 || ch < 1 || cw > w || ch > h {
		return image.Rectangle{}
	}
	x, y := r.IntN(w-cw+1), r.IntN(h-ch+1)
	return image.Rect(x, y, x+cw, y+ch)
}

// separate decodes each view with its own DecodeCropResizeFlip call: the
// pixels (nil on error) and the errors.
func separate(d *Decoder, data []byte, views []View) ([][]byte, []error) {
	pix := make([][]byte, len(views))
	errs := make([]error, len(views))
	for i, v := range views {
		dst := make([]byte, v.W*v.H*3)
		if errs[i] = d.DecodeCropResizeFlip(data, v.Crop, v.W, v.H, dst, v.Flip); errs[i] == nil {
			pix[i] = dst
		}
	}
	return pix, errs
}

// viewErrors splits DecodeViews' error into one per view.
func viewErrors(t *testing.T, err error, n int) []error {
	t.Helper()
	errs := make([]error, n)
	if err == nil {
		return errs
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	for _, e := range list {
		var ve *ViewError
		if !errors.As(e, &ve) || ve.View < 0 || ve.View >= n || errs[ve.View] != nil {
			t.Fatalf("DecodeViews returned %v, not one *ViewError per failed view", err)
		}
		errs[ve.View] = ve.Err
	}
	return errs
}

// decodedAlone is, for each view decoded on its own by DecodeViews, the
// restart intervals it entropy-decodes.
func decodedAlone(t *testing.T, d *Decoder, data []byte, views []View) map[int]bool {
	t.Helper()
	need := map[int]bool{}
	for _, v := range views {
		if err := d.DecodeViews(data, []View{v}); err != nil {
			t.Fatal(err)
		}
		for s, n := range d.intervalDecodes() {
			if n > 1 {
				t.Fatalf("one view decoded interval %d %d times", s, n)
			}
			if n == 1 {
				need[s] = true
			}
		}
	}
	return need
}

type viewImage struct {
	name string
	data []byte
	w, h int
	cut  bool // DecodeViews shares entropy decoding (restart markers in line)
}

// viewImages are the test photo encoded in the ways that matter to
// DecodeViews, an installed photo as it is, and a 4x bigger one.
func viewImages(t testing.TB) []viewImage {
	p := loadPhoto(t)
	w, h := p.w, p.h
	gray := make([]byte, w*h)
	for i := range gray {
		gray[i] = p.src[3*i+1]
	}
	enc := func(pix []byte, o encodeOptions) []byte { return encodeT(t, pix, w, h, 90, o) }
	const bw, bh = 1600, 1200
	big := make([]byte, bw*bh*3)
	imgproc.ResizeArea(big, bw, bh, p.src, w, h, w*3, 3)
	ims := []viewImage{
		{"420 writer", p.jpeg, w, h, true},
		{"420 every MCU", enc(p.src, encodeOptions{subsample: true, restart: 1}), w, h, true},
		{"420 two rows", enc(p.src, encodeOptions{subsample: true, restart: 50}), w, h, true},
		{"444", enc(p.src, encodeOptions{restart: 5}), w, h, true},
		{"422", enc(p.src, encodeOptions{hs: 2, vs: 1, restart: 1}), w, h, true},
		{"gray", enc(gray, encodeOptions{gray: true, restart: 10}), w, h, true},
		{"cmyk", enc(rgbToCMYK(p.src), encodeOptions{cmyk: true, restart: 10}), w, h, true},
		{"no markers", enc(p.src, encodeOptions{subsample: true, restart: -1}), w, h, false},
		{"not lined up", enc(p.src, encodeOptions{subsample: true, restart: 3}), w, h, false},
		{"progressive", enc(p.src, encodeOptions{subsample: true, progressive: true}), w, h, false},
		{"1600x1200", encodeT(t, big, bw, bh, 90, encodeOptions{subsample: true}), bw, bh, true},
	}
	for _, path := range photoPaths {
		if b, err := os.ReadFile(path); err == nil {
			if fw, fh, err := DecodeConfig(b); err == nil {
				ims = append(ims, viewImage{"installed " + filepath.Base(path), b, fw, fh, false})
			}
			break
		}
	}
	return ims
}

// TestDecodeViews checks that DecodeViews gives every view the bytes its
// own DecodeCropResizeFlip gives, and entropy-decodes each restart interval
// that any view needs exactly once.
func TestDecodeViews(t *testing.T) {
	d := NewDecoder()
	defer d.Close()
	for _, im := range viewImages(t) {
		sets := viewSets(im.w, im.h)
		for _, name := range slices.Sorted(maps.Keys(sets)) {
			t.Run(im.name+"/"+name, func(t *testing.T) {
				views := sets[name]
				want, werrs := separate(d, im.data, views)
				for i, err := range werrs {
					if err != nil {
						t.Fatalf("view %d alone: %v", i, err)
					}
				}
				if err := d.DecodeViews(im.data, views); err != nil {
					t.Fatal(err)
				}
				for i, v := range views {
					if !bytes.Equal(v.Dst, want[i]) {
						t.Fatalf("view %d (%v to %dx%d, flip %t): pixels differ from DecodeCropResizeFlip's", i, v.Crop, v.W, v.H, v.Flip)
					}
				}
				counts := d.intervalDecodes()
				if !im.cut {
					if len(counts) != 0 {
						t.Fatalf("a JPEG without usable markers cached %d intervals", len(counts))
					}
					return
				}
				need := decodedAlone(t, d, im.data, views)
				if len(need) == 0 {
					t.Fatal("no view cut a region stream")
				}
				if err := d.DecodeViews(im.data, views); err != nil {
					t.Fatal(err)
				}
				decoded, total := 0, 0
				for s, n := range d.intervalDecodes() {
					if n != 0 && n != 1 || (n == 1) != need[s] {
						t.Fatalf("interval %d: entropy-decoded %d times; needed by some view: %t", s, n, need[s])
					}
					decoded += n
				}
				for _, v := range views {
					if err := d.DecodeViews(im.data, []View{v}); err != nil {
						t.Fatal(err)
					}
					for _, n := range d.intervalDecodes() {
						total += n
					}
				}
				t.Logf("%d views: %d intervals entropy-decoded, %d with one decode per view", len(views), decoded, total)
			})
		}
	}
}

// A decoder that goes from one image to another of the same size decodes
// each from its own data, and ordinary decodes in between are unaffected.
func TestDecodeViewsNextImage(t *testing.T) {
	p := loadPhoto(t)
	mirrored := make([]byte, len(p.src))
	for y := 0; y < p.h; y++ {
		for x := 0; x < p.w; x++ {
			copy(mirrored[(y*p.w+x)*3:][:3], p.src[(y*p.w+p.w-1-x)*3:])
		}
	}
	imgs := [][]byte{p.jpeg, encodeT(t, mirrored, p.w, p.h, 90, encodeOptions{subsample: true}), encodeT(t, p.src, p.w, p.h, 75, encodeOptions{subsample: true})}
	views := viewSets(p.w, p.h)["dino"]
	d, ref := NewDecoder(), NewDecoder()
	defer d.Close()
	defer ref.Close()
	for round := range 2 {
		for k, img := range imgs {
			want, _ := separate(ref, img, views)
			if err := d.DecodeViews(img, views); err != nil {
				t.Fatal(err)
			}
			for i, v := range views {
				if !bytes.Equal(v.Dst, want[i]) {
					t.Fatalf("round %d, image %d, view %d: pixels differ", round, k, i)
				}
			}
			got := make([]byte, 96*96*3)
			if err := d.DecodeCropResizeFlip(img, views[3].Crop, 96, 96, got, false); err != nil {
				t.Fatal(err)
			}
			if want, _ := separate(ref, img, []View{{Crop: views[3].Crop, W: 96, H: 96}}); !bytes.Equal(got, want[0]) {
				t.Fatalf("round %d, image %d: a decode after DecodeViews differs", round, k)
			}
		}
	}
}

// Damage in any one restart interval fails exactly the views that fail on
// their own, whichever view decodes the interval first; the others get
// their pixels.
func TestDecodeViewsDamage(t *testing.T) {
	p := loadPhoto(t)
	d := NewDecoder()
	defer d.Close()
	for _, restart := range []int{1, 0, 50} { // one MCU; the writer's choice; two MCU rows
		enc := encodeT(t, p.src, p.w, p.h, 90, encodeOptions{subsample: true, restart: restart})
		var rst []int
		for i := 0; i+1 < len(enc); i++ {
			if enc[i] == 0xFF && enc[i+1] >= 0xD0 && enc[i+1] <= 0xD7 {
				rst = append(rst, i)
			}
		}
		v := func(x0, y0, x1, y1, out int) View {
			return View{Crop: image.Rect(x0, y0, x1, y1), W: out, H: out, Dst: make([]byte, out*out*3)}
		}
		// Overlapping, nested, disjoint, and at the bottom edge (where the
		// scan's last interval is), at scales 1/4, 1/2, 1/8 and 8/8.
		views := []View{v(200, 150, 300, 250, 25), v(150, 100, 350, 280, 100), v(220, 170, 260, 210, 40),
			v(0, 0, 130, 90, 16), v(250, 180, p.w, p.h, 60)}
		step := 1
		if testing.Short() {
			step = 7
		}
		var failed, ok int
		for k := 1; k < len(rst); k += step {
			bad := bytes.Clone(enc)
			for i := rst[k-1] + 4; i < rst[k]-2; i += 3 {
				if b := bad[i] ^ 0x21; bad[i] != 0xFF && b != 0xFF {
					bad[i] = b
				}
			}
			want, werrs := separate(d, bad, views)
			for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 1}} {
				vs := make([]View, len(order))
				for i, j := range order {
					vs[i] = views[j]
				}
				gerrs := viewErrors(t, d.DecodeViews(bad, vs), len(vs))
				for i, j := range order {
					switch {
					case (gerrs[i] == nil) != (werrs[j] == nil):
						t.Fatalf("restart %d, interval %d, order %v: view %d: error %v, on its own %v", restart, k, order, j, gerrs[i], werrs[j])
					case gerrs[i] != nil:
						if !strings.Contains(gerrs[i].Error(), "Corrupt JPEG data") {
							t.Fatalf("restart %d, interval %d, view %d: %v", restart, k, j, gerrs[i])
						}
						failed++
					case !bytes.Equal(vs[i].Dst, want[j]):
						t.Fatalf("restart %d, interval %d, order %v: view %d: pixels differ from its own decode's", restart, k, order, j)
					default:
						ok++
					}
				}
			}
		}
		if failed == 0 || ok == 0 {
			t.Fatalf("restart %d: %d views failed, %d decoded", restart, failed, ok)
		}
	}
}

// Bad arguments fail their own view only, and an error names its view.
func TestDecodeViewsBadView(t *testing.T) {
	p := loadPhoto(t)
	d := NewDecoder()
	defer d.Close()
	good := View{Crop: image.Rect(10, 10, 200, 200), W: 64, H: 64, Dst: make([]byte, 64*64*3)}
	views := []View{
		{Crop: image.Rect(0, 0, p.w+1, 10), W: 8, H: 8, Dst: make([]byte, 8*8*3)},
		good,
		{Crop: image.Rect(0, 0, 10, 10), W: 8, H: 8, Dst: make([]byte, 10)},
	}
	err := d.DecodeViews(p.jpeg, views)
	errs := viewErrors(t, err, len(views))
	if errs[0] == nil || errs[1] != nil || !errors.Is(errs[2], ErrShortBuffer) || !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "view 0: ") || !strings.Contains(err.Error(), "view 2: ") {
		t.Fatalf("error does not name its views: %v", err)
	}
	want, _ := separate(d, p.jpeg, []View{good})
	if !bytes.Equal(good.Dst, want[0]) {
		t.Fatal("the good view's pixels differ")
	}
	if err := d.DecodeViews(nil, views); err == nil {
		t.Fatal("empty input: no error")
	}
	if err := d.DecodeViews(p.jpeg, nil); err != nil {
		t.Fatalf("no views: %v", err)
	}
}

// A timed DecodeViews adds up its views' Timing, with one input copy, and
// its pixels are those of an untimed one.
func TestDecodeViewsTiming(t *testing.T) {
	p := loadPhoto(t)
	d := NewDecoder()
	defer d.Close()
	views := viewSets(p.w, p.h)["dino"]
	if err := d.DecodeViews(p.jpeg, views); err != nil {
		t.Fatal(err)
	}
	want := make([][]byte, len(views))
	for i, v := range views {
		want[i] = bytes.Clone(v.Dst)
	}
	if d.LastTiming() != (Timing{}) {
		t.Fatalf("untimed DecodeViews recorded %+v", d.LastTiming())
	}
	d.SetTimed(true)
	var sum Timing
	for range 20 {
		if err := d.DecodeViews(p.jpeg, views); err != nil {
			t.Fatal(err)
		}
		tm := d.LastTiming()
		if tm.Entropy < 0 || tm.Entropy > tm.Decode || tm.Copy < 0 {
			t.Fatalf("inconsistent %+v", tm)
		}
		sum.Copy += tm.Copy
		sum.Entropy += tm.Entropy
		sum.Decode += tm.Decode
	}
	for i, v := range views {
		if !bytes.Equal(v.Dst, want[i]) {
			t.Fatalf("view %d: a timed DecodeViews changed the pixels", i)
		}
	}
	if sum.Decode == 0 || sum.Entropy == 0 {
		t.Fatalf("nothing timed: %+v", sum)
	}
	t.Logf("20 DINO view sets: %+v (entropy %.0f%%)", sum, 100*float64(sum.Entropy)/float64(sum.Decode))
}

// viewBenchPhoto is the first installed photo, its middle 4:3 resized to
// w×h and encoded at quality 90 by Encode (restart markers in line).
func viewBenchPhoto(b *testing.B, w, h int) []byte {
	var data []byte
	for _, p := range photoPaths {
		if f, err := os.ReadFile(p); err == nil {
			data = f
			break
		}
	}
	if data == nil {
		b.Skip("no test photo installed (mate-backgrounds or similar)")
	}
	fw, fh, err := DecodeConfig(data)
	if err != nil {
		b.Fatal(err)
	}
	full := make([]byte, fw*fh*3)
	if _, _, err := NewDecoder().Decode(data, full); err != nil {
		b.Fatal(err)
	}
	cw, ch := fw, fw*3/4
	if ch > fh {
		cw, ch = fh*4/3, fh
	}
	r := image.Rect((fw-cw)/2, (fh-ch)/2, (fw-cw)/2+cw, (fh-ch)/2+ch)
	pix := make([]byte, w*h*3)
	imgproc.ResizeArea(pix, w, h, imgproc.SubRect(full, fw*3, 3, r), cw, ch, fw*3, 3)
	enc, err := Encode(pix, w, h, 90)
	if err != nil {
		b.Fatal(err)
	}
	return enc
}

// BenchmarkDecodeViews decodes the views of self-supervised training from
// one image, with DecodeViews ("shared") and with a DecodeCropResizeFlip
// per view ("separate"): SimCLR's 2 RandomResizedCrops (scale 0.08-1) at
// 224, and DINO's 2 at 224 (scale 0.4-1) plus 8 at 96 (scale 0.05-0.4).
// Besides the time per image it reports the CPU time, the entropy decoding
// time (from a timed pass over the same views) and the restart intervals
// entropy-decoded per image.
func BenchmarkDecodeViews(b *testing.B) {
	layouts := map[string]func(r *rand.Rand, w, h int) []View{
		"simclr": func(r *rand.Rand, w, h int) []View { return dinoViews(r, w, h, 2, 0.08, 1, 224) },
		"dino": func(r *rand.Rand, w, h int) []View {
			return append(dinoViews(r, w, h, 2, 0.4, 1, 224), dinoViews(r, w, h, 8, 0.05, 0.4, 96)...)
		},
	}
	for _, size := range []image.Point{{500, 375}, {1600, 1200}} {
		data := viewBenchPhoto(b, size.X, size.Y)
		for _, layout := range []string{"simclr", "dino"} {
			r := rand.New(rand.NewPCG(7, 8))
			sets := make([][]View, 32)
			for i := range sets {
				sets[i] = layouts[layout](r, size.X, size.Y)
				for j := range sets[i] {
					sets[i][j].Flip = r.IntN(2) == 1
				}
			}
			for _, shared := range []bool{true, false} {
				mode := map[bool]string{true: "shared", false: "separate"}[shared]
				b.Run(fmt.Sprintf("%dx%d/%s/%s", size.X, size.Y, layout, mode), func(b *testing.B) {
					d := NewDecoder()
					defer d.Close()
					decode := func(vs []View) {
						if shared {
							if err := d.DecodeViews(data, vs); err != nil {
								b.Fatal(err)
							}
							return
						}
						for _, v := range vs {
							if err := d.DecodeCropResizeFlip(data, v.Crop, v.W, v.H, v.Dst, v.Flip); err != nil {
								b.Fatal(err)
							}
						}
					}
					stop := cpuPerOp(b)
					i := 0
					for b.Loop() {
						decode(sets[i%len(sets)])
						i++
					}
					stop()
					// Entropy time and intervals decoded, outside the timing.
					d.SetTimed(true)
					var entropy int64
					intervals := 0
					for _, vs := range sets {
						if shared {
							decode(vs)
							entropy += d.LastTiming().Entropy
							intervals += sum(d.intervalDecodes())
							continue
						}
						for _, v := range vs {
							decode([]View{v})
							entropy += d.LastTiming().Entropy
							if err := d.DecodeViews(data, []View{v}); err != nil {
								b.Fatal(err)
							}
							intervals += sum(d.intervalDecodes())
						}
					}
					b.ReportMetric(float64(entropy)/float64(len(sets)), "entropy-ns/op")
					b.ReportMetric(float64(intervals)/float64(len(sets)), "intervals/op")
				})
			}
		}
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// A view session (BeginViews, DecodeView, EndViews) gives DecodeViews'
// pixels and sharing one view at a time; plain decodes of other images in
// the middle of a session decode their own data and leave it intact.
func TestViewSession(t *testing.T) {
	p := loadPhoto(t)
	other := encodeT(t, p.src, p.w, p.h, 75, encodeOptions{subsample: true})
	views := viewSets(p.w, p.h)["dino"]
	d, ref := NewDecoder(), NewDecoder()
	defer d.Close()
	defer ref.Close()
	cases := []struct {
		name   string
		img    []byte
		shares bool
		plain  []byte // decoded with DecodeCropResizeFlip between views, if any
	}{
		{"writer jpeg", p.jpeg, true, nil},
		{"plain decodes between views", p.jpeg, true, other},
		{"plain decode of an image of the same length", p.jpeg, true, sameLength(p.jpeg)},
		{"no markers", encodeT(t, p.src, p.w, p.h, 90, encodeOptions{subsample: true, restart: -1}), false, other},
		{"next image", other, true, p.jpeg},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := separate(ref, tc.img, views)
			d.BeginViews()
			for i, v := range views {
				dst := make([]byte, v.W*v.H*3)
				if err := d.DecodeView(tc.img, View{Crop: v.Crop, W: v.W, H: v.H, Dst: dst, Flip: v.Flip}, i == len(views)-1); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(dst, want[i]) {
					t.Fatalf("view %d: pixels differ from its own decode", i)
				}
				if tc.plain != nil && i == 1 {
					got := make([]byte, 96*96*3)
					if err := d.DecodeCropResizeFlip(tc.plain, views[3].Crop, 96, 96, got, false); err != nil {
						t.Fatal(err)
					}
					if w, _ := separate(ref, tc.plain, []View{{Crop: views[3].Crop, W: 96, H: 96}}); !bytes.Equal(got, w[0]) {
						t.Fatal("a plain decode inside the session differs")
					}
				}
			}
			d.EndViews()
			counts := d.intervalDecodes()
			if tc.shares && tc.plain == nil && (len(counts) == 0 || slices.Max(counts) != 1) {
				t.Errorf("an interval was entropy-decoded %d times in the session", slices.Max(counts))
			}
			if !tc.shares && sum(counts) != 0 {
				t.Errorf("a JPEG without lined-up markers cached %d intervals", sum(counts))
			}
		})
	}
}

// sameLength is another valid JPEG of data's length with other pixels:
// data with the DC step of its first quantisation table one larger.
func sameLength(data []byte) []byte {
	out := bytes.Clone(data)
	at := bytes.Index(out, []byte{0xFF, 0xDB})
	out[at+5]++ // FF DB, length (2), precision/slot, then the DC step
	return out
}
