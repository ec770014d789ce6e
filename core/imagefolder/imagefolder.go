// Package imagefolder reads torchvision's ImageFolder layout (one folder per
// class, image files inside; labels are the sorted folder names' positions)
// and writes it to a .beton without Python touching any image.
package imagefolder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/imageenc"
)

// Extensions are the image file suffixes taken, as torchvision's IMG_EXTENSIONS.
var Extensions = []string{".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp", ".gif"}

// ErrLayout marks a folder that is not in ImageFolder's layout.
var ErrLayout = errors.New("not an ImageFolder")

// Folder is a scanned ImageFolder tree.
type Folder struct {
	Classes []string `json:"classes"`
	Files   []string `json:"files"`
	Labels  []int    `json:"labels"`
}

// Scan lists root's class folders (sorted) and their image files (sorted,
// recursively, as torchvision does).
func Scan(root string) (*Folder, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("image folder: %w", err)
	}
	f := &Folder{}
	for _, e := range entries {
		if e.IsDir() {
			f.Classes = append(f.Classes, e.Name())
		}
	}
	sort.Strings(f.Classes)
	if len(f.Classes) == 0 {
		return nil, fmt.Errorf("%w: %s has no class folders: it needs one folder per class with the class's "+
			"images inside (%s/<class>/<image>.jpg)", ErrLayout, root, filepath.Clean(root))
	}
	for label, class := range f.Classes {
		var files []string
		err := filepath.WalkDir(filepath.Join(root, class), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && isImage(p) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("image folder: %w", err)
		}
		sort.Strings(files)
		for _, p := range files {
			f.Files = append(f.Files, p)
			f.Labels = append(f.Labels, label)
		}
	}
	if len(f.Files) == 0 {
		return nil, fmt.Errorf("%w: the class folders of %s hold no image files (%s)", ErrLayout, root,
			strings.Join(Extensions, " "))
	}
	return f, nil
}

func isImage(p string) bool {
	ext := strings.ToLower(filepath.Ext(p))
	for _, e := range Extensions {
		if ext == e {
			return true
		}
	}
	return false
}

// Options configure Write.
type Options struct {
	Image    field.ImageOptions
	PageSize uint64
	Workers  int
	// Progress, if set, is updated with the number of samples written.
	Progress *atomic.Int64
}

// Write stores the folder's images as fields (image: RGBImageField,
// label: IntField) in a .beton at path. Files are read, decoded, resized and
// encoded by the writer's worker goroutines.
func (f *Folder) Write(path string, o Options) error {
	enc, err := imageenc.NewEncoder(field.Desc{Type: field.RGBImage, Name: "image"}, o.Image)
	if err != nil {
		return err
	}
	descs := []field.Desc{{Type: field.RGBImage, Name: "image"}, {Type: field.Int, Name: "label"}}
	encs := []field.Encoder{enc, field.NewIntEncoder()}
	w, err := beton.Create(path, descs, encs, uint64(len(f.Files)), beton.WriterOptions{PageSize: o.PageSize, Workers: o.Workers})
	if err != nil {
		return err
	}
	for i, p := range f.Files {
		vals := []field.Value{{Path: p}, {Int: int64(f.Labels[i])}}
		if err := w.Put(uint64(i), vals); err != nil {
			w.Abort()
			return err
		}
		if o.Progress != nil {
			o.Progress.Store(int64(w.Placed()))
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if o.Progress != nil {
		o.Progress.Store(int64(len(f.Files)))
	}
	return nil
}
