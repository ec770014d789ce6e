package pipeline

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imgproc"
)

// The augmentation ops (colour jitter, blur, rotation, crops, erasing, the
// policies and the Label* ops): inferred shapes, argument checks,
// determinism, in-place runs, pairing by seed and per-sample allocations.
// Their pixels are compared with torchvision in tests/python/test_augment_ops.py.

// photoLike is an image with smooth gradients, edges and every value range.
func photoLike(h, w, c int) []byte {
	b := make([]byte, h*w*c)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for k := 0; k < c; k++ {
				v := 128 + 100*math.Sin(float64(x*(k+1))/5+float64(y)/7)
				if (x/6+y/5)%3 == 0 {
					v = 255 - v/2
				}
				b[(y*w+x)*c+k] = byte(v)
			}
		}
	}
	return b
}

// runKey runs op on img for the sample at pos with randomness key key.
func runKey(t *testing.T, op Op, in Spec, img []byte, pos uint64, key int) []byte {
	t.Helper()
	out, err := op.Out(in)
	if err != nil {
		t.Fatalf("Out(%v): %v", in, err)
	}
	c := NewCtx()
	c.Seed, c.Pos, c.Sample = 7, pos, pos
	dst := make([]byte, out.Bytes())
	if err := op.Run(c, key, img, dst); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return dst
}

var augCases = []struct {
	name   string
	args   map[string]any
	random bool // draws something per sample
	out    []int
}{
	{"color_jitter", map[string]any{"p": 1, "brightness": []float64{0.5, 1.5}, "contrast": []float64{0.5, 1.5},
		"saturation": []float64{0.5, 1.5}, "hue": []float64{-0.3, 0.3}}, true, nil},
	{"color_jitter", map[string]any{"p": 1, "hue": []float64{0.2, 0.2}}, false, nil},
	{"gaussian_blur", map[string]any{"p": 1, "kernel_size": 5, "sigma": []float64{0.1, 2}}, true, nil},
	{"rotate", map[string]any{"p": 1, "angle": 0.5, "fill": []float32{9}}, true, nil},
	{"rotate", map[string]any{"p": 1, "angle": 0.5, "interpolation": "bilinear"}, true, nil},
	{"random_erasing", map[string]any{"p": 1, "scale": []float64{0.1, 0.3}, "ratio": []float64{0.5, 2},
		"value": []float64{0}}, true, nil},
	{"center_crop", map[string]any{"size": []int{8, 10}, "ratio": 0.8}, false, []int{8, 10, 3}},
	{"corner_crop", map[string]any{"size": []int{6, 6}, "ratio": 0.5, "corner": "bottom_right"}, false, []int{6, 6, 3}},
	{"augment_op", map[string]any{"name": "ShearX", "magnitude": 0.3}, false, nil},
	{"augment_op", map[string]any{"name": "Equalize"}, false, nil},
	{"augment_op", map[string]any{"name": "Sharpness", "magnitude": 0.5}, false, nil},
	{"rand_augment", map[string]any{"num_ops": 2, "magnitude": 9, "num_magnitude_bins": 31}, true, nil},
	{"rand_augment", map[string]any{"interpolation": "bilinear", "fill": []float32{1, 2, 3}}, true, nil},
	{"trivial_augment_wide", map[string]any{}, true, nil},
	{"auto_augment", map[string]any{"policy": "imagenet"}, true, nil},
	{"auto_augment", map[string]any{"policy": "svhn", "fill": []float32{128}}, true, nil},
	{"augmix", map[string]any{"severity": 3, "mixture_width": 2, "chain_depth": -1, "alpha": 1, "all_ops": true}, true, nil},
}

// TestAugmentOps: each op keeps or sets the shape, gives the same output for
// the same sample and in place, and (when random) differs between samples.
func TestAugmentOps(t *testing.T) {
	const h, w, c = 20, 24, 3
	in := imgSpec(h, w, c)
	img := photoLike(h, w, c)
	for _, tc := range augCases {
		t.Run(tc.name, func(t *testing.T) {
			op := newOp(t, tc.name, tc.args)
			spec, first := apply(t, op, in, img, 3, 5)
			want := []int{h, w, c}
			if tc.out != nil {
				want = tc.out
			}
			if !slices.Equal(spec.Shape, want) || spec.DType != "|u1" {
				t.Fatalf("output %v %s, want %v |u1", spec.Shape, spec.DType, want)
			}
			if _, again := apply(t, newOp(t, tc.name, tc.args), in, img, 3, 5); !slices.Equal(first, again) {
				t.Fatal("same sample, different output")
			}
			if ip, ok := op.(InPlacer); ok && ip.InPlace() {
				buf := slices.Clone(img)
				cx := NewCtx()
				cx.Seed, cx.Pos = 3, 5
				if err := op.Run(cx, 0, buf, buf); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(buf, first) {
					t.Fatal("in place differs from out of place")
				}
			}
			differ := 0
			for pos := uint64(0); pos < 12; pos++ {
				if _, o := apply(t, op, in, img, 3, pos); !slices.Equal(o, first) {
					differ++
				}
			}
			if tc.random && differ == 0 {
				t.Fatal("every sample got the same output")
			}
			if !tc.random && differ != 0 {
				t.Fatalf("%d samples differ for a deterministic op", differ)
			}
		})
	}
}

// TestAugmentOpsDoNotAllocate: per-sample work reuses per-worker buffers.
func TestAugmentOpsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	const h, w, c = 20, 24, 3
	in := imgSpec(h, w, c)
	img := photoLike(h, w, c)
	for _, tc := range augCases {
		t.Run(tc.name, func(t *testing.T) {
			op := newOp(t, tc.name, tc.args)
			spec, err := op.Out(in)
			if err != nil {
				t.Fatal(err)
			}
			cx, dst := NewCtx(), make([]byte, spec.Bytes())
			pos := uint64(0)
			allocs := testing.AllocsPerRun(20, func() {
				cx.Pos = pos
				pos++
				if err := op.Run(cx, 0, img, dst); err != nil {
					t.Fatal(err)
				}
			})
			if allocs > 0 {
				t.Fatalf("%v allocations per sample", allocs)
			}
		})
	}
}

func TestAugmentBadArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"color_jitter", map[string]any{"p": 1, "hue": []float64{-0.6, 0}}, "hue"},
		{"color_jitter", map[string]any{"p": 1, "hue": []float64{0.2, 0.1}}, "hue"},
		{"color_jitter", map[string]any{"p": 1, "brightness": []float64{-1, 1}}, "brightness"},
		{"color_jitter", map[string]any{"p": 2}, "p 2"},
		{"gaussian_blur", map[string]any{"p": 1, "kernel_size": 4, "sigma": []float64{1, 1}}, "kernel_size 4"},
		{"gaussian_blur", map[string]any{"p": 1, "kernel_size": 3, "sigma": []float64{0, 1}}, "sigma"},
		{"gaussian_blur", map[string]any{"p": 1, "kernel_size": 3, "sigma": []float64{2, 1}}, "sigma"},
		{"rotate", map[string]any{"p": 1, "angle": 0.1, "interpolation": "bicubic"}, "interpolation"},
		{"rotate", map[string]any{"p": 1, "angle": -1}, "angle"},
		{"random_erasing", map[string]any{"p": 1, "scale": []float64{0.5, 0.1}, "ratio": []float64{1, 1}, "value": []float64{0}}, "scale"},
		{"random_erasing", map[string]any{"p": 1, "scale": []float64{0.1, 0.5}, "ratio": []float64{0, 1}, "value": []float64{0}}, "ratio"},
		{"random_erasing", map[string]any{"p": 1, "scale": []float64{0.1, 0.5}, "ratio": []float64{1, 1}}, "value"},
		{"center_crop", map[string]any{"size": []int{0, 4}, "ratio": 1}, "size"},
		{"center_crop", map[string]any{"size": []int{4, 4}, "ratio": 1.5}, "ratio"},
		{"corner_crop", map[string]any{"size": []int{4, 4}, "ratio": 1, "corner": "middle"}, "corner"},
		{"augment_op", map[string]any{"name": "Shear"}, "unknown augmentation"},
		{"augment_op", map[string]any{"name": "Posterize", "magnitude": 9}, "Posterize"},
		{"augment_op", map[string]any{"name": "Solarize", "magnitude": 1.5}, "Solarize"},
		{"augment_op", map[string]any{"name": "Brightness", "magnitude": -1.5}, "Brightness"},
		{"rand_augment", map[string]any{"magnitude": 31}, "magnitude 31"},
		{"rand_augment", map[string]any{"magnitude": -1}, "magnitude -1"},
		{"rand_augment", map[string]any{"num_ops": -1}, "num_ops"},
		{"rand_augment", map[string]any{"num_magnitude_bins": 1, "magnitude": 0}, "num_magnitude_bins"},
		{"rand_augment", map[string]any{"severity": 2}, "takes no severity"},
		{"trivial_augment_wide", map[string]any{"num_magnitude_bins": 1}, "num_magnitude_bins"},
		{"auto_augment", map[string]any{"policy": "cifar100"}, "policy"},
		{"augmix", map[string]any{"severity": 0}, "severity"},
		{"augmix", map[string]any{"mixture_width": 0}, "mixture_width"},
		{"augmix", map[string]any{"alpha": 0}, "alpha"},
		{"label", map[string]any{"of": map[string]any{"op": "color_jitter", "p": 1}}, "seed"},
		{"label", map[string]any{"of": map[string]any{"op": "gaussian_blur", "p": 1, "kernel_size": 3,
			"sigma": []float64{0, 1}}, "seed": 1}, "sigma"},
		{"label", map[string]any{"of": map[string]any{"op": "translate", "padding": -1, "fill": []int{0}}, "seed": 1}, "padding"},
		{"label", map[string]any{"of": map[string]any{"op": "cutout", "size": 2, "fill": []int{0}}, "seed": 1}, "no parameters to report"},
		{"label", map[string]any{"of": map[string]any{"op": "nope"}, "seed": 1}, "unknown operation"},
	} {
		t.Run(tc.name+"_"+tc.want, func(t *testing.T) {
			m := map[string]any{"op": tc.name}
			for k, v := range tc.args {
				m[k] = v
			}
			raw, _ := json.Marshal(m)
			_, err := registry[tc.name](Env{}, raw)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}

func TestAugmentBadInputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
		in   Spec
		want string
	}{
		{"color_jitter", map[string]any{"p": 1}, imgSpec(8, 8, 4), "1 or 3 channels"},
		{"rand_augment", map[string]any{}, imgSpec(8, 8, 2), "1 or 3 channels"},
		{"rand_augment", map[string]any{"fill": []float32{1, 2}}, imgSpec(8, 8, 3), "fill has 2 values"},
		{"rotate", map[string]any{"p": 1, "fill": []float32{1, 2}}, imgSpec(8, 8, 3), "fill has 2 values"},
		{"gaussian_blur", map[string]any{"p": 1, "kernel_size": 9, "sigma": []float64{1, 1}}, imgSpec(4, 20, 3), "kernel_size 9"},
		{"random_erasing", map[string]any{"p": 1, "scale": []float64{0.1, 0.2}, "ratio": []float64{1, 1},
			"value": []float64{1, 2}}, imgSpec(8, 8, 3), "value has 2"},
		{"augment_op", map[string]any{"name": "Invert"}, Spec{Shape: []int{8, 8, 3}, DType: "<f4"}, "uint8"},
		{"label", labelArgs("grayscale", map[string]any{"p": 0.5}), Spec{Shape: []int{2, 2}, DType: "<i8"}, "vector"},
		{"label", labelArgs("grayscale", map[string]any{"p": 0.5}), Spec{Shape: []int{1}, DType: "<u2"}, "numeric"},
	} {
		t.Run(tc.name+"_"+tc.want, func(t *testing.T) {
			op := newOp(t, tc.name, tc.args)
			if _, err := op.Out(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}

// labelArgs is the label op's spec reporting on image op name with args,
// paired by seed 42.
func labelArgs(name string, args map[string]any) map[string]any {
	of := map[string]any{"op": name}
	for k, v := range args {
		of[k] = v
	}
	return map[string]any{"of": of, "seed": 42}
}

// labelValues runs the label op of image op name (args) on an int64 label
// and returns its float32s.
func labelValues(t *testing.T, name string, args map[string]any, label int64, pos uint64, key int) []float32 {
	t.Helper()
	in := make([]byte, 8)
	binary.LittleEndian.PutUint64(in, uint64(label))
	out := runKey(t, newOp(t, "label", labelArgs(name, args)), Spec{Shape: []int{1}, DType: "<i8"}, in, pos, key)
	v := make([]float32, len(out)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
	}
	if v[0] != float32(label) {
		t.Fatalf("label %d came out as %v", label, v[0])
	}
	return v[1:]
}

func withSeed(args map[string]any) map[string]any {
	m := map[string]any{"seed": 42}
	for k, v := range args {
		m[k] = v
	}
	return m
}

// TestLabelOpsReportTheDraws: with the key both get from the same seed, a
// Label op's parameters are what its image op did to the sample.
func TestLabelOpsReportTheDraws(t *testing.T) {
	const h, w, c = 16, 20, 3
	in := imgSpec(h, w, c)
	img := photoLike(h, w, c)
	key := SeedKey(42)
	seen := map[string]map[float32]bool{}
	note := func(name string, v float32) {
		if seen[name] == nil {
			seen[name] = map[float32]bool{}
		}
		seen[name][v] = true
	}
	for pos := uint64(0); pos < 24; pos++ {
		// Blur: sigma 0 exactly when the image is untouched, else the blur with that sigma.
		blur := map[string]any{"p": 0.5, "kernel_size": 5, "sigma": []float64{0.5, 2}}
		got := runKey(t, newOp(t, "gaussian_blur", blur), in, img, pos, key)
		sigma := labelValues(t, "gaussian_blur", blur, int64(pos), pos, key)[0]
		want := slices.Clone(img)
		if sigma != 0 {
			new(imgproc.Blurrer).GaussianBlur(want, h, w, c, 5, float64(sigma))
		}
		if d := maxDiff(got, want); d > 1 {
			t.Fatalf("sample %d: blur differs by %d from sigma %v", pos, d, sigma)
		}
		note("blur", sigma)

		// Grayscale: 0 exactly when the channels became equal.
		g := labelValues(t, "grayscale", map[string]any{"p": 0.5}, 3, pos, key)[0]
		gray := runKey(t, newOp(t, "grayscale", map[string]any{"p": 0.5}), in, img, pos, key)
		if (g == 0) != !slices.Equal(gray, img) {
			t.Fatalf("sample %d: grayscale label %v, image changed %v", pos, g, !slices.Equal(gray, img))
		}
		note("gray", g)

		// Translate: the reported shift is the image's.
		sh := labelValues(t, "translate", map[string]any{"padding": 3, "fill": []int{0, 0, 0}}, 1, pos, key)
		moved := runKey(t, newOp(t, "translate", map[string]any{"padding": 3, "fill": []int{0, 0, 0}}), in, img, pos, key)
		if !slices.Equal(moved, shifted(img, h, w, c, int(sh[0]), int(sh[1]), []byte{0, 0, 0})) {
			t.Fatalf("sample %d: translate is not the reported shift %v", pos, sh)
		}
		note("translate", sh[0]*10+sh[1])

		// Colour jitter with hue alone: the image is the hue shift by the reported factor.
		jit := map[string]any{"p": 0.7, "hue": []float64{-0.4, 0.4}}
		f := labelValues(t, "color_jitter", jit, 0, pos, key)
		jittered := runKey(t, newOp(t, "color_jitter", jit), in, img, pos, key)
		want = slices.Clone(img)
		imgproc.Hue(want, c, float64(f[3]))
		if f[0] != 1 || f[1] != 1 || f[2] != 1 || maxDiff(jittered, want) > 1 {
			t.Fatalf("sample %d: jitter factors %v do not describe the image", pos, f)
		}
		note("jitter", f[3])
	}
	for name, vals := range seen {
		if len(vals) < 2 || (name != "gray" && len(vals) < 3) {
			t.Errorf("%s: only %d distinct parameters over 24 samples", name, len(vals))
		}
	}
}

func maxDiff(a, b []byte) int {
	m := 0
	for i := range a {
		m = max(m, int(a[i])-int(b[i]), int(b[i])-int(a[i]))
	}
	return m
}

// TestLabelRRCReportsTheDecoderCrop: label_rrc reads the image's metadata
// and reports the crop the rgb_rrc decoder with the same key takes.
func TestLabelRRCReportsTheDecoderCrop(t *testing.T) {
	const w, h = 48, 36
	pix, _, col := testImage(t, w, h)
	args := map[string]any{"size": []int{16, 16}, "scale": []float64{0.2, 0.8}, "ratio": []float64{0.75, 1.333}}
	env := Env{Desc: field.Desc{Type: field.RGBImage}}
	dec, err := registry["rgb_rrc"](env, mustJSON(t, args))
	if err != nil {
		t.Fatal(err)
	}
	lab, err := registry["label_rrc"](env, mustJSON(t, withSeed(args)))
	if err != nil {
		t.Fatal(err)
	}
	for pos := uint64(0); pos < 10; pos++ {
		c := NewCtx()
		c.Seed, c.Pos, c.Col, c.Heap = 7, pos, col(field.ModeRaw), pix
		out := make([]byte, 16*16*3)
		if err := dec.Run(c, SeedKey(42), nil, out); err != nil {
			t.Fatal(err)
		}
		spec, _ := lab.Out(Spec{})
		if !slices.Equal(spec.Shape, []int{6}) || spec.DType != "<i4" {
			t.Fatalf("label_rrc output %v", spec)
		}
		p := make([]byte, 24)
		if err := lab.Run(c, SeedKey(42), nil, p); err != nil {
			t.Fatal(err)
		}
		v := make([]int, 6)
		for i := range v {
			v[i] = int(int32(binary.LittleEndian.Uint32(p[4*i:])))
		}
		if v[0] != w || v[1] != h {
			t.Fatalf("size %v, want %dx%d", v[:2], w, h)
		}
		crop := image.Rect(v[3], v[2], v[3]+v[5], v[2]+v[4])
		want := make([]byte, len(out))
		new(imgproc.Resizer).ResizeArea(want, 16, 16, imgproc.SubRect(pix, w*3, 3, crop), crop.Dx(), crop.Dy(), w*3, 3)
		if !slices.Equal(out, want) {
			t.Fatalf("sample %d: decoder output is not the reported crop %v", pos, crop)
		}
	}
}

// TestPolicyMagnitudes: the bins torchvision computes for its spaces.
func TestPolicyMagnitudes(t *testing.T) {
	for _, tc := range []struct {
		s          space
		op, i, bin int
		want       float64
		signed     bool
	}{
		{spaceRA, opPosterize, 0, 31, 8, false},
		{spaceRA, opPosterize, 9, 31, 7, false}, // 8 - 9/7.5 = 6.8
		{spaceRA, opPosterize, 30, 31, 4, false},
		{spaceTA, opPosterize, 30, 31, 2, false},
		{spaceAM, opPosterize, 9, 10, 0, false},
		{spaceRA, opSolarize, 0, 31, 1, false},
		{spaceRA, opSolarize, 30, 31, 0, false},
		{spaceRA, opRotate, 30, 31, 30, true},
		{spaceTA, opRotate, 30, 31, 135, true},
		{spaceRA, opShearX, 10, 11, 0.3, true},
		{spaceRA, opTranslateX, 30, 31, 150.0 / 331.0 * 40, true},
		{spaceRA, opTranslateY, 30, 31, 150.0 / 331.0 * 30, true},
		{spaceTA, opTranslateY, 30, 31, 32, true},
		{spaceAM, opTranslateX, 9, 10, 40.0 / 3, true},
	} {
		got, signed := tc.s.magnitude(tc.op, tc.i, tc.bin, 30, 40)
		if math.Abs(got-tc.want) > 1e-5*max(1, math.Abs(tc.want)) || signed != tc.signed {
			t.Errorf("%s bin %d of %d: %v (signed %v), want %v (%v)", augOps[tc.op], tc.i, tc.bin, got, signed, tc.want, tc.signed)
		}
	}
}

// TestAugmentOpsOnOneChannel: grey images work too; hue and saturation
// leave them as they are, as torchvision's do.
func TestAugmentOpsOnOneChannel(t *testing.T) {
	const h, w = 18, 22
	in := imgSpec(h, w, 1)
	img := photoLike(h, w, 1)
	for _, tc := range augCases {
		if fill, ok := tc.args["fill"].([]float32); ok && len(fill) > 1 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			op := newOp(t, tc.name, tc.args)
			spec, a := apply(t, op, in, img, 3, 2)
			if spec.Shape[2] != 1 {
				t.Fatalf("output %v", spec.Shape)
			}
			if _, b := apply(t, op, in, img, 3, 2); !slices.Equal(a, b) {
				t.Fatal("same sample, different output")
			}
		})
	}
	for _, args := range []map[string]any{
		{"p": 1, "hue": []float64{0.3, 0.3}},
		{"p": 1, "saturation": []float64{0.2, 0.2}},
	} {
		if _, got := apply(t, newOp(t, "color_jitter", args), in, img, 1, 1); !slices.Equal(got, img) {
			t.Errorf("%v changed a grey image", args)
		}
	}
}

// augOpsDigest is the SHA-256 of augOpsOutputs on x86-64: the augmentation
// ops' float32 arithmetic must give the same pixels on every machine (see
// floatOpsDigest). After a deliberate change, take the new digest from x86-64.
const augOpsDigest = "d569f7d4191072acd4ad63f4d5203b143ff86181fae4ec9355991a8bae08f6a5"

func augOpsOutputs(t *testing.T) []byte {
	const h, w, c = 20, 24, 3
	in := imgSpec(h, w, c)
	img := photoLike(h, w, c)
	d := sha256.New()
	for _, tc := range augCases {
		op := newOp(t, tc.name, tc.args)
		for pos := uint64(0); pos < 16; pos++ {
			_, out := apply(t, op, in, img, 11, pos)
			d.Write(out)
		}
	}
	for _, name := range augOps {
		for _, m := range []float64{-0.37, 0.6} {
			for _, interp := range []string{"nearest", "bilinear"} {
				args := map[string]any{"name": name, "magnitude": m, "interpolation": interp}
				if name == "Posterize" {
					args["magnitude"] = 3
				}
				if name == "Solarize" {
					args["magnitude"] = 0.6
				}
				_, out := apply(t, newOp(t, "augment_op", args), in, img, 1, 0)
				d.Write(out)
			}
		}
	}
	return d.Sum(nil)
}

func TestAugmentOpsDigest(t *testing.T) {
	if got := hex.EncodeToString(augOpsOutputs(t)); got != augOpsDigest {
		t.Errorf("the augmentation ops made other pixels than on x86-64: digest %s, want %s", got, augOpsDigest)
	}
}

// TestAugmentOpsShareAcrossWorkers: workers run one op value at once, each
// with its own Ctx; results are those of a lone run (go test -race checks
// the op keeps no per-sample state).
func TestAugmentOpsShareAcrossWorkers(t *testing.T) {
	const h, w, c = 16, 20, 3
	in := imgSpec(h, w, c)
	img := photoLike(h, w, c)
	cases := append(augCases[:len(augCases):len(augCases)], struct {
		name   string
		args   map[string]any
		random bool
		out    []int
	}{"label", labelArgs("color_jitter", map[string]any{"p": 0.5, "hue": []float64{-0.2, 0.2}}), true, nil})
	for _, tc := range cases {
		op := newOp(t, tc.name, tc.args)
		spec, src := in, img
		if tc.name == "label" {
			spec, src = Spec{Shape: []int{1}, DType: "<i8"}, make([]byte, 8)
		}
		outSpec, err := op.Out(spec)
		if err != nil {
			t.Fatal(err)
		}
		want := make([][]byte, 8)
		for pos := range want {
			_, want[pos] = apply(t, newOp(t, tc.name, tc.args), spec, src, 5, uint64(pos))
		}
		done := make(chan error, 4)
		for g := 0; g < 4; g++ {
			go func() {
				cx, dst := NewCtx(), make([]byte, outSpec.Bytes())
				for pos := range want {
					cx.Seed, cx.Pos, cx.Sample = 5, uint64(pos), uint64(pos)
					if err := op.Run(cx, 0, src, dst); err != nil {
						done <- err
						return
					}
					if !slices.Equal(dst, want[pos]) {
						done <- fmt.Errorf("%s sample %d: differs from a lone run", tc.name, pos)
						return
					}
				}
				done <- nil
			}()
		}
		for g := 0; g < 4; g++ {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
}
