package main

/*
#include <stdint.h>
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ffcv-go/ffcv-go/core/yolo"
)

type yoloSpec struct {
	YAML       string `json:"yaml"`
	Split      string `json:"split"`
	Task       string `json:"task"`
	NumWorkers int    `json:"num_workers"`
	// SegmentPoints: segment polygons resampled to this many points.
	SegmentPoints int `json:"segment_points"`
}

type yoloScan struct {
	Names    []string    `json:"names"`
	KptShape [2]int      `json:"kpt_shape"`
	FlipIdx  []int       `json:"flip_idx"`
	Orphans  []string    `json:"orphans"`
	Images   []yolo.Item `json:"images"`
}

//export ffcv_yolo_scan
func ffcv_yolo_scan(specJSON *C.char, out **C.char, err **C.char) (ret C.int64_t) {
	defer guard(err, &ret)
	var spec yoloSpec
	if e := parseSpec(specJSON, &spec); e != nil {
		return fail(err, e)
	}
	s, e := scanYOLO(spec)
	if e != nil {
		return fail(err, e)
	}
	b, _ := json.Marshal(s)
	if e := putString(out, string(b)); e != nil {
		return fail(err, e)
	}
	return C.int64_t(len(s.Images))
}

func scanYOLO(spec yoloSpec) (yoloScan, error) {
	if spec.YAML == "" {
		return yoloScan{}, fmt.Errorf("%w: spec: no yaml (the dataset YAML's path)", errArgument)
	}
	cfg, err := yolo.ReadConfig(spec.YAML)
	if err != nil {
		return yoloScan{}, badDataset{err}
	}
	f := yolo.Format{Task: yolo.Task(spec.Task), NumClasses: len(cfg.Names), Keypoints: cfg.KptShape,
		SegmentPoints: spec.SegmentPoints}
	if err := f.Check(); err != nil {
		return yoloScan{}, fmt.Errorf("%w: %s: %v", errArgument, spec.YAML, err)
	}
	images, err := cfg.Images(spec.Split)
	if err != nil {
		return yoloScan{}, badDataset{fmt.Errorf("%s: %w", spec.YAML, err)}
	}
	s := yoloScan{Names: cfg.Names, KptShape: cfg.KptShape, FlipIdx: cfg.FlipIdx, Orphans: []string{},
		Images: yolo.Convert(images, f, spec.NumWorkers)}
	if allFolders(cfg, spec.Split) {
		// An image list may share its label folders with other splits: only folders are checked.
		if s.Orphans, err = yolo.Orphans(images); err != nil {
			return yoloScan{}, err
		}
	}
	return s, nil
}

func allFolders(cfg yolo.Config, split string) bool {
	for _, e := range cfg.Splits[split] {
		if !filepath.IsAbs(e) {
			e = filepath.Join(cfg.Root, e)
		}
		if st, err := os.Stat(e); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// badDataset is a dataset YAML or split that cannot be read: a ValueError in
// Python, or FileNotFoundError for a missing file.
type badDataset struct{ error }

func (e badDataset) Unwrap() error        { return e.error }
func (e badDataset) Is(target error) bool { return target == errArgument }
