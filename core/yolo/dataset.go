package yolo

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // image sizes
	_ "image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"
	"gopkg.in/yaml.v3"
)

// Config is a dataset YAML.
type Config struct {
	Root     string // the dataset's folder: `path`, relative to the YAML's folder
	Splits   map[string][]string
	Names    []string // by class id
	KptShape [2]int
	FlipIdx  []int
}

// ReadConfig reads a dataset YAML: path, train, val, test (a folder, an
// image list file, or a list of them, relative to path), names (a list, or a
// map of ids 0..n-1 to names), kpt_shape and flip_idx.
func ReadConfig(file string) (Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Config{}, err
	}
	var raw struct {
		Path     string    `yaml:"path"`
		Train    yaml.Node `yaml:"train"`
		Val      yaml.Node `yaml:"val"`
		Test     yaml.Node `yaml:"test"`
		Names    yaml.Node `yaml:"names"`
		KptShape []int     `yaml:"kpt_shape"`
		FlipIdx  []int     `yaml:"flip_idx"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return Config{}, fmt.Errorf("%s: %w", file, err)
	}
	c := Config{Root: raw.Path, Splits: map[string][]string{}, FlipIdx: raw.FlipIdx}
	if !filepath.IsAbs(c.Root) {
		// Absolute, so that the /images/ folder of an image path is found
		// when the YAML is named relative to the working directory.
		abs, err := filepath.Abs(file)
		if err != nil {
			return c, err
		}
		c.Root = filepath.Join(filepath.Dir(abs), c.Root)
	}
	for name, n := range map[string]*yaml.Node{"train": &raw.Train, "val": &raw.Val, "test": &raw.Test} {
		var one string
		var many []string
		switch {
		case n.Kind == 0 || n.Tag == "!!null":
			continue
		case n.Decode(&one) == nil:
			many = []string{one}
		case n.Decode(&many) != nil:
			return c, fmt.Errorf("%s: %s must be a path or a list of paths", file, name)
		}
		c.Splits[name] = many
	}
	var list []string
	var byID map[int]string
	switch {
	case raw.Names.Decode(&list) == nil && raw.Names.Kind == yaml.SequenceNode:
		c.Names = list
	case raw.Names.Decode(&byID) == nil && raw.Names.Kind == yaml.MappingNode:
		c.Names = make([]string, len(byID))
		for id, name := range byID {
			if id < 0 || id >= len(byID) {
				return c, fmt.Errorf("%s: names: class id %d is not in 0..%d (ids must be 0..n-1)", file, id, len(byID)-1)
			}
			c.Names[id] = name
		}
	default:
		return c, fmt.Errorf("%s: names must be a list or a map of class id to name", file)
	}
	if len(c.Names) == 0 {
		return c, fmt.Errorf("%s: no class names", file)
	}
	if raw.KptShape != nil {
		if len(raw.KptShape) != 2 {
			return c, fmt.Errorf("%s: kpt_shape %v must be [points, 2 or 3]", file, raw.KptShape)
		}
		c.KptShape = [2]int{raw.KptShape[0], raw.KptShape[1]}
	}
	for _, k := range c.FlipIdx {
		if k < 0 || (c.KptShape[0] > 0 && k >= c.KptShape[0]) || (c.KptShape[0] > 0 && len(c.FlipIdx) != c.KptShape[0]) {
			return c, fmt.Errorf("%s: flip_idx %v must be a permutation of 0..%d", file, c.FlipIdx, c.KptShape[0]-1)
		}
	}
	return c, nil
}

// imageExts are the image files that a split folder holds.
var imageExts = map[string]bool{".jpg": true, ".jpeg": true, ".png": true, ".bmp": true, ".webp": true,
	".tif": true, ".tiff": true}

// Images lists a split's images, sorted: every image file under a folder,
// or the lines of an image list file (relative to its own folder).
func (c Config) Images(split string) ([]string, error) {
	entries, ok := c.Splits[split]
	if !ok {
		return nil, fmt.Errorf("the dataset YAML has no %q split", split)
	}
	var out []string
	for _, e := range entries {
		p := e
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.Root, p)
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("split %s: %w", split, err)
		}
		if st.IsDir() {
			err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && imageExts[strings.ToLower(filepath.Ext(path))] {
					out = append(out, path)
				}
				return err
			})
		} else {
			err = readList(p, &out)
		}
		if err != nil {
			return nil, fmt.Errorf("split %s: %w", split, err)
		}
	}
	sort.Strings(out)
	return out, nil
}

func readList(file string, out *[]string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(filepath.Dir(file), line)
		}
		*out = append(*out, line)
	}
	return s.Err()
}

// LabelPath is an image's label file, as Ultralytics finds it: the last
// /images/ folder of its path replaced by /labels/, the extension by .txt.
func LabelPath(img string) string {
	sep := string(filepath.Separator)
	a := sep + "images" + sep
	if k := strings.LastIndex(img, a); k >= 0 {
		img = img[:k] + sep + "labels" + sep + img[k+len(a):]
	}
	return strings.TrimSuffix(img, filepath.Ext(img)) + ".txt"
}

// Item is an image and its objects, coordinates in pixels.
type Item struct {
	Image     string       `json:"image"`
	Label     string       `json:"label"`
	Missing   bool         `json:"missing,omitempty"` // no label file: a background image
	Width     int          `json:"width"`
	Height    int          `json:"height"`
	Classes   []int        `json:"classes"`
	Boxes     [][4]float64 `json:"boxes"`
	Polygons  [][]float64  `json:"polygons,omitempty"`
	Keypoints [][]float64  `json:"keypoints,omitempty"`
	Error     string       `json:"error,omitempty"` // why this image cannot be used
}

// Convert reads the images' sizes and label files on workers goroutines
// (< 1: every CPU). A bad image or label file sets its item's Error.
func Convert(images []string, f Format, workers int) []Item {
	if workers < 1 {
		workers = runtime.NumCPU()
	}
	out := make([]Item, len(images))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, max(len(images), 1)) {
		wg.Go(func() {
			for i := range next {
				out[i] = convert(images[i], f)
			}
		})
	}
	for i := range images {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func convert(img string, f Format) Item {
	it := Item{Image: img, Label: LabelPath(img), Classes: []int{}, Boxes: [][4]float64{}}
	fail := func(err error) Item {
		it.Error = err.Error()
		return it
	}
	file, err := os.Open(img)
	if err != nil {
		return fail(err)
	}
	cfg, _, err := image.DecodeConfig(file)
	if err == nil {
		_, err = file.Seek(0, io.SeekStart)
	}
	o := orientation(bufio.NewReader(file))
	file.Close()
	if err != nil {
		return fail(fmt.Errorf("%s: not a readable image: %w", img, err))
	}
	if o > 1 {
		// Refused rather than written with labels in another frame than its pixels.
		return fail(fmt.Errorf("%s: EXIF orientation %d: Ultralytics reads its labels on the image turned upright, "+
			"which the writer does not do; store it upright (e.g. PIL.ImageOps.exif_transpose)", img, o))
	}
	it.Width, it.Height = cfg.Width, cfg.Height
	data, err := os.ReadFile(it.Label)
	if errors.Is(err, fs.ErrNotExist) {
		it.Missing = true // Ultralytics: an image without a label file is background
		return it
	}
	if err != nil {
		return fail(err)
	}
	objs, err := Parse(data, f)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", it.Label, err))
	}
	w, h := float64(it.Width), float64(it.Height)
	for _, o := range objs {
		it.Classes = append(it.Classes, o.Class)
		it.Boxes = append(it.Boxes, [4]float64{o.Box[0] * w, o.Box[1] * h, o.Box[2] * w, o.Box[3] * h})
		if f.Task == Segment {
			poly := scale(o.Polygon, 2, w, h)
			if f.SegmentPoints > 0 {
				poly = Resample(poly, f.SegmentPoints)
			}
			it.Polygons = append(it.Polygons, poly)
		}
		if f.Task == Pose {
			it.Keypoints = append(it.Keypoints, scale(o.Points, f.Keypoints[1], w, h))
		}
	}
	return it
}

// scale multiplies the x and y of each group of d values by w and h.
func scale(v []float64, d int, w, h float64) []float64 {
	out := make([]float64, len(v))
	for k, x := range v {
		switch k % d {
		case 0:
			x *= w
		case 1:
			x *= h
		}
		out[k] = x
	}
	return out
}

// Orphans are the label files in the label folders of images that belong to
// no image: a label file without its image.
func Orphans(images []string) ([]string, error) {
	have := make(map[string]bool, len(images))
	dirs := map[string]bool{}
	for _, img := range images {
		l := LabelPath(img)
		have[l] = true
		dirs[filepath.Dir(l)] = true
	}
	var out []string
	for d := range dirs {
		ents, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".txt") && !have[p] {
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
