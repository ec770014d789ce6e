package ops

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/imgproc"
	"github.com/ffcv-go/ffcv-go/core/internal/testimg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// Every family's augmentation ops together (colour jitter, blur, rotation,
// crops, erasing, the policies and the Label* ops): inferred shapes,
// determinism, in-place runs, pairing by seed, per-sample allocations and
// sharing between workers. Their pixels are compared with torchvision in
// tests/python/test_augment_ops.py.

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

// photoInput is a photo-like h×w image of c channels and its spec.
func photoInput(h, w, c int) (pipeline.Spec, []byte) {
	return optest.ImgSpec(h, w, c), testimg.PhotoLike(h, w, c)
}

// TestAugmentOps: each op keeps or sets the shape, gives the same output for
// the same sample and in place, and (when random) differs between samples.
func TestAugmentOps(t *testing.T) {
	const h, w, c = 20, 24, 3
	in, img := photoInput(h, w, c)
	for _, tc := range augCases {
		t.Run(tc.name, func(t *testing.T) {
			op := optest.NewOp(t, tc.name, tc.args)
			spec, first := optest.Apply(t, op, in, img, 3, 5)
			want := []int{h, w, c}
			if tc.out != nil {
				want = tc.out
			}
			if !slices.Equal(spec.Shape, want) || spec.DType != "|u1" {
				t.Fatalf("output %v %s, want %v |u1", spec.Shape, spec.DType, want)
			}
			if _, again := optest.Apply(t, optest.NewOp(t, tc.name, tc.args), in, img, 3, 5); !slices.Equal(first, again) {
				t.Fatal("same sample, different output")
			}
			if ip, ok := op.(pipeline.InPlacer); ok && ip.InPlace() {
				buf := slices.Clone(img)
				cx := pipeline.NewCtx()
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
				if _, o := optest.Apply(t, op, in, img, 3, pos); !slices.Equal(o, first) {
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
	if optest.RaceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	const h, w, c = 20, 24, 3
	in, img := photoInput(h, w, c)
	for _, tc := range augCases {
		t.Run(tc.name, func(t *testing.T) {
			op := optest.NewOp(t, tc.name, tc.args)
			spec, err := op.Out(in)
			if err != nil {
				t.Fatal(err)
			}
			cx, dst := pipeline.NewCtx(), make([]byte, spec.Bytes())
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
	out := optest.RunKey(t, optest.NewOp(t, "label", labelArgs(name, args)), pipeline.Spec{Shape: []int{1}, DType: "<i8"}, in, pos, key)
	v := make([]float32, len(out)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
	}
	if v[0] != float32(label) {
		t.Fatalf("label %d came out as %v", label, v[0])
	}
	return v[1:]
}

// TestLabelOpsReportTheDraws: with the key both get from the same seed, a
// Label op's parameters are what its image op did to the sample.
func TestLabelOpsReportTheDraws(t *testing.T) {
	const h, w, c = 16, 20, 3
	in, img := photoInput(h, w, c)
	key := pipeline.SeedKey(42)
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
		got := optest.RunKey(t, optest.NewOp(t, "gaussian_blur", blur), in, img, pos, key)
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
		gray := optest.RunKey(t, optest.NewOp(t, "grayscale", map[string]any{"p": 0.5}), in, img, pos, key)
		if (g == 0) != !slices.Equal(gray, img) {
			t.Fatalf("sample %d: grayscale label %v, image changed %v", pos, g, !slices.Equal(gray, img))
		}
		note("gray", g)

		// Translate: the reported shift is the image's.
		sh := labelValues(t, "translate", map[string]any{"padding": 3, "fill": []int{0, 0, 0}}, 1, pos, key)
		moved := optest.RunKey(t, optest.NewOp(t, "translate", map[string]any{"padding": 3, "fill": []int{0, 0, 0}}), in, img, pos, key)
		// FFCV-SSL's convention: (dy + padding, dx + padding).
		if sh[0] < 0 || sh[0] > 6 || sh[1] < 0 || sh[1] > 6 ||
			!slices.Equal(moved, optest.Shifted(img, h, w, c, int(sh[0])-3, int(sh[1])-3, []byte{0, 0, 0})) {
			t.Fatalf("sample %d: translate is not the reported shift %v", pos, sh)
		}
		note("translate", sh[0]*10+sh[1])

		// Colour jitter with hue alone: the image is the hue shift by the reported factor.
		jit := map[string]any{"p": 0.7, "hue": []float64{-0.4, 0.4}}
		f := labelValues(t, "color_jitter", jit, 0, pos, key)
		jittered := optest.RunKey(t, optest.NewOp(t, "color_jitter", jit), in, img, pos, key)
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

// TestAugmentOpsOnOneChannel: grey images work too; hue and saturation
// leave them as they are, as torchvision's do.
func TestAugmentOpsOnOneChannel(t *testing.T) {
	const h, w = 18, 22
	in, img := photoInput(h, w, 1)
	for _, tc := range augCases {
		if fill, ok := tc.args["fill"].([]float32); ok && len(fill) > 1 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			op := optest.NewOp(t, tc.name, tc.args)
			spec, a := optest.Apply(t, op, in, img, 3, 2)
			if spec.Shape[2] != 1 {
				t.Fatalf("output %v", spec.Shape)
			}
			if _, b := optest.Apply(t, op, in, img, 3, 2); !slices.Equal(a, b) {
				t.Fatal("same sample, different output")
			}
		})
	}
	for _, args := range []map[string]any{
		{"p": 1, "hue": []float64{0.3, 0.3}},
		{"p": 1, "saturation": []float64{0.2, 0.2}},
	} {
		if _, got := optest.Apply(t, optest.NewOp(t, "color_jitter", args), in, img, 1, 1); !slices.Equal(got, img) {
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
	in, img := photoInput(h, w, c)
	d := sha256.New()
	for _, tc := range augCases {
		op := optest.NewOp(t, tc.name, tc.args)
		for pos := uint64(0); pos < 16; pos++ {
			_, out := optest.Apply(t, op, in, img, 11, pos)
			d.Write(out)
		}
	}
	for _, name := range []string{"Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness",
		"Color", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"} {
		for _, m := range []float64{-0.37, 0.6} {
			for _, interp := range []string{"nearest", "bilinear"} {
				args := map[string]any{"name": name, "magnitude": m, "interpolation": interp}
				if name == "Posterize" {
					args["magnitude"] = 3
				}
				if name == "Solarize" {
					args["magnitude"] = 0.6
				}
				_, out := optest.Apply(t, optest.NewOp(t, "augment_op", args), in, img, 1, 0)
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
	in, img := photoInput(h, w, c)
	cases := append(augCases[:len(augCases):len(augCases)], struct {
		name   string
		args   map[string]any
		random bool
		out    []int
	}{"label", labelArgs("color_jitter", map[string]any{"p": 0.5, "hue": []float64{-0.2, 0.2}}), true, nil})
	for _, tc := range cases {
		op := optest.NewOp(t, tc.name, tc.args)
		spec, src := in, img
		if tc.name == "label" {
			spec, src = pipeline.Spec{Shape: []int{1}, DType: "<i8"}, make([]byte, 8)
		}
		outSpec, err := op.Out(spec)
		if err != nil {
			t.Fatal(err)
		}
		want := make([][]byte, 8)
		for pos := range want {
			_, want[pos] = optest.Apply(t, optest.NewOp(t, tc.name, tc.args), spec, src, 5, uint64(pos))
		}
		done := make(chan error, 4)
		for g := 0; g < 4; g++ {
			go func() {
				cx, dst := pipeline.NewCtx(), make([]byte, outSpec.Bytes())
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

func TestLabelBadArguments(t *testing.T) {
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "label", Args: map[string]any{"of": map[string]any{"op": "color_jitter", "p": 1}}, Want: "seed"},
		{Name: "label", Args: map[string]any{"of": map[string]any{"op": "gaussian_blur", "p": 1, "kernel_size": 3, "sigma": []float64{0, 1}}, "seed": 1}, Want: "sigma"},
		{Name: "label", Args: map[string]any{"of": map[string]any{"op": "translate", "padding": -1, "fill": []int{0}}, "seed": 1}, Want: "padding"},
		{Name: "label", Args: map[string]any{"of": map[string]any{"op": "cutout", "size": 2, "fill": []int{0}}, "seed": 1}, Want: "no parameters to report"},
		{Name: "label", Args: map[string]any{"of": map[string]any{"op": "nope"}, "seed": 1}, Want: "unknown operation"},
	})
}

func TestLabelBadInputs(t *testing.T) {
	optest.CheckBadInputs(t, []optest.BadInput{
		{Name: "label", Args: labelArgs("grayscale", map[string]any{"p": 0.5}), In: pipeline.Spec{Shape: []int{2, 2}, DType: "<i8"}, Want: "vector"},
		{Name: "label", Args: labelArgs("grayscale", map[string]any{"p": 0.5}), In: pipeline.Spec{Shape: []int{1}, DType: "<u2"}, Want: "numeric"},
	})
}

// TestUnknownArgument: every operation rejects an argument it does not
// declare ({"op": "flip_h", "prob": 1} must not silently never flip).
func TestUnknownArgument(t *testing.T) {
	raw := func(name string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"op": name, "prob": 1})
		return b
	}
	for _, name := range pipeline.Names() {
		t.Run(name, func(t *testing.T) {
			_, err := pipeline.New(pipeline.Env{}, raw(name))
			if err == nil || !strings.Contains(err.Error(), `unknown field "prob"`) {
				t.Fatalf("got %v, want an unknown-field error", err)
			}
		})
	}
	for _, name := range pipeline.BatchNames() {
		t.Run(name, func(t *testing.T) {
			_, err := pipeline.NewBatch(raw(name))
			if err == nil || !strings.Contains(err.Error(), `unknown field "prob"`) {
				t.Fatalf("got %v, want an unknown-field error", err)
			}
		})
	}
}
