package yolo

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var (
	det  = Format{Task: Detect, NumClasses: 3}
	seg  = Format{Task: Segment, NumClasses: 3}
	pose = Format{Task: Pose, NumClasses: 1, Keypoints: [2]int{2, 3}}
)

func TestParseLine(t *testing.T) {
	cases := []struct {
		name, line string
		f          Format
		want       Object
		err        string
	}{
		{"box", "1 0.5 0.5 0.5 0.25", det, Object{Class: 1, Box: [4]float64{0.25, 0.375, 0.75, 0.625}}, ""},
		{"box clipped", "0 0.1 0.1 0.4 0.4", det, Object{Box: [4]float64{0, 0, 0.30000000000000004, 0.30000000000000004}}, ""},
		{"tabs and float class", "2.0\t0.5 0.5\t1 1", det, Object{Class: 2, Box: [4]float64{0, 0, 1, 1}}, ""},
		{"within tolerance", "0 1.005 0.5 0.1 0.1", det, Object{Box: [4]float64{0.95, 0.45, 1, 0.55}}, ""},
		{"polygon as a box", "0 0.1 0.2 0.5 0.2 0.3 0.9", det, Object{Box: [4]float64{0.1, 0.2, 0.5, 0.9}}, ""},
		{"polygon", "2 0.1 0.2 0.5 0.2 0.3 0.9", seg,
			Object{Class: 2, Box: [4]float64{0.1, 0.2, 0.5, 0.9}, Polygon: []float64{0.1, 0.2, 0.5, 0.2, 0.3, 0.9}}, ""},
		{"pose", "0 0.5 0.5 0.2 0.2 0.4 0.45 2 0 0 0", pose,
			Object{Box: [4]float64{0.4, 0.4, 0.6, 0.6}, Points: []float64{0.4, 0.45, 2, 0, 0, 0}}, ""},
		{"too few columns", "0 0.5 0.5 0.5", det, Object{}, "4 columns"},
		{"odd polygon in detect", "0 0.1 0.2 0.5 0.2 0.3", det, Object{}, "6 columns"},
		{"class too big", "3 0.5 0.5 0.5 0.5", det, Object{}, "class id 3 is not one of the 3 names"},
		{"negative class", "-1 0.5 0.5 0.5 0.5", det, Object{}, "class id -1"},
		{"fractional class", "0.5 0.5 0.5 0.5 0.5", det, Object{}, "class id 0.5"},
		{"not a number", "0 0.5 x 0.5 0.5", det, Object{}, `column 3: "x" is not a number`},
		{"nan", "0 nan 0.5 0.5 0.5", det, Object{}, "is not a number"},
		{"pixels not normalized", "0 320 0.5 0.5 0.5", det, Object{}, "column 2: coordinate 320 is outside [0, 1]"},
		{"negative", "0 0.5 -0.02 0.5 0.5", det, Object{}, "column 3: coordinate -0.02"},
		{"two points", "0 0.1 0.1 0.5 0.5", seg, Object{}, "a polygon of 2 points: it needs at least 3"},
		{"odd segment", "0 0.1 0.1 0.5 0.5 0.2", seg, Object{}, "6 columns"},
		{"pose columns", "0 0.5 0.5 0.2 0.2 0.4 0.45 2", pose, Object{}, "8 columns: a pose line with kpt_shape [2 3] has 11"},
		{"keypoint outside", "0 0.5 0.5 0.2 0.2 0.4 1.5 2 0 0 0", pose, Object{}, "column 7: coordinate 1.5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseLine(c.line, c.f)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k := range got.Box {
				if math.Abs(got.Box[k]-c.want.Box[k]) > 1e-12 {
					t.Fatalf("box %v, want %v", got.Box, c.want.Box)
				}
			}
			got.Box = c.want.Box
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestParseLineNumbers(t *testing.T) {
	cases := []struct {
		data string
		line int
		n    int
	}{
		{"", 0, 0},
		{"\n\n", 0, 0},
		{"0 0.5 0.5 0.1 0.1\n\n1 0.5 0.5 0.1 0.1\r\n", 0, 2},
		{"0 0.5 0.5 0.1 0.1\n\n1 0.5 0.5 0.1\n", 3, 0},
		{"7 0.5 0.5 0.1 0.1", 1, 0},
	}
	for _, c := range cases {
		objs, err := Parse([]byte(c.data), det)
		var le *LineError
		if c.line == 0 {
			if err != nil || len(objs) != c.n {
				t.Fatalf("%q: %d objects, %v; want %d", c.data, len(objs), err, c.n)
			}
		} else if !errors.As(err, &le) || le.Line != c.line {
			t.Fatalf("%q: error %v, want one at line %d", c.data, err, c.line)
		}
	}
}

func TestLabelPath(t *testing.T) {
	cases := map[string]string{
		"/d/images/train/a.jpg":           "/d/labels/train/a.txt",
		"/images/d/images/train/a.b.PNG":  "/images/d/labels/train/a.b.txt",
		"/d/images/train/images/x/a.jpeg": "/d/images/train/labels/x/a.txt",
		"/d/pictures/a.jpg":               "/d/pictures/a.txt",
		"/d/myimages/train/a.jpg":         "/d/myimages/train/a.txt",
	}
	for in, want := range cases {
		if got := LabelPath(in); got != want {
			t.Errorf("LabelPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, yaml string
		names      []string
		err        string
	}{
		{"list", "path: .\ntrain: images/train\nnames: [a, b]\n", []string{"a", "b"}, ""},
		{"map", "train: [images/a, images/b]\nnames:\n  1: b\n  0: a\n", []string{"a", "b"}, ""},
		{"gap", "train: x\nnames:\n  0: a\n  2: c\n", nil, "class id 2 is not in 0..1"},
		{"none", "train: x\n", nil, "names must be"},
		{"flip", "train: x\nnames: [p]\nkpt_shape: [2, 3]\nflip_idx: [0]\n", nil, "flip_idx"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name+".yaml")
		if err := os.WriteFile(p, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := ReadConfig(p)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(cfg.Names, c.names) || cfg.Root != dir {
			t.Fatalf("%s: %+v, %v", c.name, cfg, err)
		}
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"0 0.5 0.5 0.2 0.2", "1 0.1 0.1 0.9 0.1 0.5 0.9", "0 0.5 0.5 0.2 0.2 0.4 0.45 2 0 0 0",
		"9 1e308 -0 +.5 0x1p-2", "0 nan inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, fm := range []Format{det, seg, pose} {
			o, err := ParseLine(line, fm)
			if err != nil {
				continue
			}
			if o.Class < 0 || o.Class >= fm.NumClasses {
				t.Fatalf("%q: class %d", line, o.Class)
			}
			for _, x := range append(o.Box[:], o.Polygon...) {
				if !(x >= 0 && x <= 1) {
					t.Fatalf("%q: coordinate %v outside [0, 1]", line, x)
				}
			}
			if o.Box[0] > o.Box[2] || o.Box[1] > o.Box[3] {
				t.Fatalf("%q: box %v", line, o.Box)
			}
			if fm.Task == Pose && len(o.Points) != fm.Keypoints[0]*fm.Keypoints[1] {
				t.Fatalf("%q: %d point values", line, len(o.Points))
			}
		}
	})
}

// A YAML named relative to the working directory still gives absolute image
// paths, whose /images/ folder LabelPath finds.
func TestRelativeYAML(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "images", "train"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"d.yaml": "train: images/train\nnames: [a]\n", "images/train/x.jpg": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	cfg, err := ReadConfig("d.yaml")
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := cfg.Images("train")
	if err != nil || len(imgs) != 1 || LabelPath(imgs[0]) != filepath.Join(dir, "labels", "train", "x.txt") {
		t.Fatalf("%v, %v", imgs, err)
	}
}
