package ops

import (
	"encoding/json"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// validArgs is a valid spec of each built-in operation, as Python's
// constructors write them.
var validArgs = map[string]map[string]any{
	"int": {}, "float": {}, "ndarray": {}, "bytes": {},
	"rgb_simple": {}, "rgb_pad": {},
	"rgb_rrc":         {"size": []int{8, 8}, "scale": []float64{0.08, 1}, "ratio": []float64{0.75, 1.33}, "seed": 2, "second_seed": 1},
	"rgb_center":      {"size": []int{8, 8}, "ratio": 0.875},
	"rgb_corner":      {"size": []int{8, 8}, "ratio": 0.875, "corner": "bottom_left"},
	"rgb_resize_pad":  {"size": []int{8, 8}, "scale": []float64{0.5, 1}, "fill": []int{0, 0, 0}},
	"label_rrc":       {"size": []int{8, 8}, "scale": []float64{0.08, 1}, "ratio": []float64{0.75, 1.33}, "seed": 1},
	"rgb_letterbox":   {"size": []int{8, 10}, "scale_fill": false, "scaleup": true, "center": true, "fill": []int{114}},
	"label_letterbox": {"size": []int{8, 10}, "scaleup": false},
	"letterbox":       {"size": []int{8, 10}, "center": false, "fill": []int{1, 2, 3}},
	"random_hsv":      {"hgain": 0.015, "sgain": 0.7, "vgain": 0.4},
	"rgb_iou_crop": {"size": []int{8, 8}, "boxes": "boxes", "min_scale": 0.3, "max_scale": 1.0,
		"min_aspect_ratio": 0.5, "max_aspect_ratio": 2.0, "trials": 40},
	"label_iou_crop": {"size": []int{8, 8}, "boxes": "boxes", "min_scale": 0.3, "max_scale": 1.0,
		"min_aspect_ratio": 0.5, "max_aspect_ratio": 2.0, "trials": 40, "sampler_options": []float64{0.5, 1}, "seed": 2},
	"zoom_out":     {"fill": []int{0}, "side_range": []float64{1, 4}, "p": 0.5},
	"rrc":          {"size": []int{8, 8}, "scale": []float64{0.08, 1}, "ratio": []float64{0.75, 1.33}},
	"center_crop":  {"size": []int{8, 8}, "ratio": 1},
	"corner_crop":  {"size": []int{8, 8}, "ratio": 1, "corner": "top_right"},
	"ragged":       {"max_rows": 3, "min_size": 1, "min_area": 1, "min_visibility": 0.5},
	"mask":         {"fill": 255},
	"polygon_mask": {"ratio": 4, "max_rows": 3},
	"copy_paste":   {"p": 0.5, "boxes": 1, "polygons": 2, "geometry": map[string]any{"image": 0, "ops": []any{map[string]any{"op": "rgb_simple"}}}},
	"text_tokens":  {"context_length": 77, "extra": "mask", "dtype": "<i4", "sot": 1},
	"text_raw":     {"max_bytes": 100},
	"flip_h":       {"p": 0.5}, "flip_v": {"p": 1},
	"mosaic":       {"imgsz": 8, "n": 4, "p": 0.5, "close_epoch": 3, "fill": []int{114, 114, 114}},
	"label_mosaic": {"imgsz": 8, "n": 9, "seed": 1},
	"yolo_mixup":   {"p": 0.5},
	"cut_mix": {"p": 0.5, "beta": 1, "num_areas": 3, "boxes": 2,
		"geometry": map[string]any{"image": 0, "ops": []any{map[string]any{"op": "rgb_simple"}}}},
	"translate":  {"padding": 4, "fill": []int{0, 0, 0}},
	"cutout":     {"size": 4, "fill": []int{255, 0, 0}},
	"brightness": {"magnitude": 0.2, "p": 0.5}, "contrast": {"magnitude": 0.2, "p": 0.5}, "saturation": {"magnitude": 0.2, "p": 0.5},
	"grayscale":     {"p": 0.2},
	"solarize":      {"threshold": 128, "p": 0.2},
	"random_crop":   {"size": []int{8, 8}, "padding": 2},
	"normalize":     {"mean": []float64{0}, "std": []float64{1}, "dtype": "<f2"},
	"replace_label": {"indices": []int{1}, "label": 3},
	"poison":        {"mask": []float32{0, 0, 0}, "alpha": 0.5, "indices": []int{0}, "clamp": []int{0, 255}},
	"image_mixup":   {"alpha": 0.2, "same_lambda": true}, "label_mixup": {"alpha": 0.2, "same_lambda": false},
	"color_jitter":         {"p": 0.8, "brightness": 0.4, "contrast": []float64{0.6, 1.4}, "saturation": nil, "hue": 0.1},
	"gaussian_blur":        {"p": 0.5, "kernel_size": 5, "sigma": 1.5},
	"rotate":               {"p": 0.5, "angle": 0.2, "interpolation": "bilinear", "fill": []float32{0}},
	"random_erasing":       {"p": 0.5, "scale": []float64{0.08, 0.4}, "ratio": []float64{0.3, 3}, "value": []float64{128, 128, 128}},
	"augment_op":           {"name": "Posterize", "magnitude": 4},
	"rand_augment":         {"num_ops": 2, "magnitude": 9, "num_magnitude_bins": 31},
	"trivial_augment_wide": {"num_magnitude_bins": 31},
	"auto_augment":         {"policy": "cifar10"},
	"augmix":               {"severity": 3, "mixture_width": 3, "chain_depth": -1, "alpha": 1, "all_ops": true},
	"label":                {"of": map[string]any{"op": "solarize", "threshold": 128, "p": 0.2}, "seed": 4},
	"clip_random":          {"num_frames": 8, "stride": 2, "short": "loop", "geometry": map[string]any{"op": "rgb_rrc", "size": []int{8, 8}, "scale": []float64{0.3, 1}, "ratio": []float64{0.75, 1.33}}},
	"clip_eval":            {"num_frames": 8, "fps": 5, "num_clips": 3, "geometry": map[string]any{"op": "rgb_center", "size": []int{8, 8}, "ratio": 0.875}},
	"audio_mono":           {},
	"audio_add_noise":      {"snr_db": []float64{0, 20}, "noise": "noise", "seed": 2},
	"audio_resample":       {"orig_freq": 22050, "new_freq": 16000, "lowpass_filter_width": 6, "rolloff": 0.99},
	"audio_gain":           {"min_db": -6, "max_db": 6},
	"audio_speed":          {"orig_freq": 16000, "factors": []float64{0.9, 1, 1.1}},
	"mel_spectrogram":      {"sample_rate": 16000, "n_fft": 400, "n_mels": 80, "power": 2, "norm": nil, "mel_scale": "htk", "center": true, "pad_mode": "reflect", "f_min": 0},
	"whisper_log_mel":      {"n_mels": 80, "pad_or_trim": true},
	"time_masking":         {"mask_param": 30, "p": 1, "n": 2, "mask_value": 0},
	"frequency_masking":    {"mask_param": 27, "p": 1, "n": 2, "mask_value": 0},
	"audio":                {"max_seconds": 2.5, "mono": true},
	"audio_random_crop":    {"seconds": 1.5, "seed": 3},
}

// TestCheck: Check builds every registered operation without a file --
// its factory checks its arguments before it consults the file, and stops
// there -- and accepts each built-in op's valid spec.
func TestCheck(t *testing.T) {
	for _, name := range append(pipeline.Names(), pipeline.BatchNames()...) {
		t.Run(name, func(t *testing.T) {
			args, ok := validArgs[name]
			m := map[string]any{"op": name}
			for k, v := range args {
				m[k] = v
			}
			spec, _ := json.Marshal(m)
			err := pipeline.Check(spec) // an op reading the file without NeedFile panics here
			if ok && err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
		})
	}
	registered := map[string]bool{}
	for _, n := range append(pipeline.Names(), pipeline.BatchNames()...) {
		registered[n] = true
	}
	for name := range validArgs {
		if !registered[name] {
			t.Errorf("validArgs has %q, which is not registered", name)
		}
	}
	for _, spec := range []string{`{"op": "nope"}`, `{"op": 3}`, `[]`} {
		if err := pipeline.Check(json.RawMessage(spec)); err == nil {
			t.Errorf("Check(%s) = nil", spec)
		}
	}
}
