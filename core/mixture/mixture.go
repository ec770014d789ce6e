// Package mixture reads several datasets as one, each with a weight: it
// opens the sources (.beton files, shard sets, s3:// or http(s):// data),
// fits their fields to one set (renamed, dropped, or refused with the
// source and field named), joins them into one beton.Reader, and turns the
// weights into the exact number of samples each source gives an epoch.
// package order draws the epochs' orders from those counts (order.Mix).
//
// The weights follow MosaicML Streaming's Stream: a source has a relative
// proportion of the epoch, or an absolute repeat (a multiple of its size)
// or choose (a number of samples), or none (taken once). litdata's
// CombinedStreamingDataset weights are Spec.Weights: relative, normalized.
//
// A source of weight 0 (proportion, repeat, choose or weight 0) gives no
// epoch a sample: it is a side source, read by operations only (a noise
// corpus for AddNoise). It is not joined into the mixture's Reader, so
// sample ids and epochs are those of the other sources, and its fields need
// not agree with theirs.
package mixture

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/dataset"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/order"
)

// ErrMixture is wrapped by every error about a mixture's sources, weights
// or fields (not by those of opening its files).
var ErrMixture = errors.New("invalid mixture")

// Source is one dataset of a mixture and its weight: at most one of
// Proportion, Repeat and Choose.
type Source struct {
	Name  string   `json:"name"`  // for errors and reports (default: the paths)
	Paths []string `json:"paths"` // files, directories, globs, URLs (see dataset.Expand)
	// Proportion is the share of the epoch (relative); Repeat how many
	// times the source is read per epoch, fractions allowed (absolute);
	// Choose the number of its samples an epoch takes (absolute).
	Proportion *float64 `json:"proportion"`
	Repeat     *float64 `json:"repeat"`
	Choose     *int64   `json:"choose"`
	// Rename gives stored field names the names the mixture knows them
	// by; Drop lists stored fields the mixture leaves out.
	Rename map[string]string `json:"rename"`
	Drop   []string          `json:"drop"`
}

// Spec is a mixture: its sources, optionally litdata-style Weights
// (relative, normalized; not with per-source weights), the EpochSize of
// relative weights (0: the sources' samples in all), and SourceField, the
// name of an IntField the mixture adds holding each sample's source index
// ("" for none).
type Spec struct {
	Sources     []Source  `json:"sources"`
	Weights     []float64 `json:"weights"`
	EpochSize   int64     `json:"epoch_size"`
	SourceField string    `json:"source_field"`

	// at is set in the Spec that Takes makes of the sources that are not
	// side sources: at[k] is source k's place in the caller's Spec, for
	// errors.
	at []int
}

// nameOf is how errors call source k: by its place in the user's spec.
func (spec *Spec) nameOf(k int) string {
	if spec.at != nil {
		return spec.Sources[k].name(spec.at[k])
	}
	return spec.Sources[k].name(k)
}

// Part is an open source: its name and files, and its part of the joined
// dataset and of every epoch.
type Part struct {
	Name  string   `json:"name"`
	Files []string `json:"files"`
	order.Part
}

// Side is an open side source (of weight 0): its files joined into a
// Reader of their own, with its renames and drops.
type Side struct {
	Name   string
	Files  []string
	Index  int // its place among the Spec's sources
	Reader *beton.Reader
}

// Mixture is an open mixture: the sources an epoch takes samples of joined
// into one Reader (sample ids follow source order, then file order), each
// one's part, and the side sources.
type Mixture struct {
	Reader *beton.Reader
	Parts  []Part // in source order, side sources left out
	Side   []Side // in source order
	// Index[k] is the place among the Spec's sources of Parts[k].
	Index []int
}

// OrderParts are the order.Parts of m's sources.
func (m *Mixture) OrderParts() []order.Part {
	out := make([]order.Part, len(m.Parts))
	for k, p := range m.Parts {
		out[k] = p.Part
	}
	return out
}

// SourceOf returns the index of the source of sample id.
func (m *Mixture) SourceOf(id uint64) int {
	return sort.Search(len(m.Parts), func(k int) bool { return m.Parts[k].Start+m.Parts[k].Size > id })
}

// Close closes the readers (and so every file).
func (m *Mixture) Close() error {
	errs := []error{m.Reader.Close()}
	for _, s := range m.Side {
		errs = append(errs, s.Reader.Close())
	}
	return errors.Join(errs...)
}

// Side reports whether source k of spec has weight 0 (see the package
// comment).
func (spec *Spec) Side(k int) bool {
	s := &spec.Sources[k]
	return (s.Proportion != nil && *s.Proportion == 0) || (s.Repeat != nil && *s.Repeat == 0) ||
		(s.Choose != nil && *s.Choose == 0) || (spec.Weights != nil && k < len(spec.Weights) && spec.Weights[k] == 0)
}

// label is how the mixture's readers call source k in errors about its
// samples: "source 1 (web)" (else the file's path, which follows, says it).
func (s *Source) label(k int) string {
	if s.Name != "" {
		return fmt.Sprintf("source %d (%s)", k, s.Name)
	}
	return fmt.Sprintf("source %d", k)
}

// name is how errors call source k.
func (s *Source) name(k int) string {
	if s.Name != "" {
		return fmt.Sprintf("source %d (%s)", k, s.Name)
	}
	return fmt.Sprintf("source %d (%s)", k, strings.Join(s.Paths, ", "))
}

// Open opens every source of spec, fits their fields together and joins
// them. Errors name the source (and the file or field) at fault.
func Open(spec Spec, opts dataset.Options) (*Mixture, error) {
	if len(spec.Sources) == 0 {
		return nil, fmt.Errorf("%w: no sources", ErrMixture)
	}
	if err := checkWeights(spec); err != nil {
		return nil, err
	}
	opened := make([][]*beton.Reader, len(spec.Sources))
	closeAll := func() {
		for _, rs := range opened {
			for _, r := range rs {
				r.Close()
			}
		}
	}
	all := make([]Part, len(spec.Sources))
	sizes := make([]uint64, len(spec.Sources))
	for k := range spec.Sources {
		s := &spec.Sources[k]
		paths, err := dataset.Expand(s.Paths, opts)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%s: %w", s.name(k), err)
		}
		all[k] = Part{Name: s.Name, Files: paths}
		if all[k].Name == "" {
			all[k].Name = strings.Join(s.Paths, ", ")
		}
		for _, p := range paths {
			r, err := dataset.OpenFile(p, opts)
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("%s: %w", s.name(k), err)
			}
			opened[k] = append(opened[k], r)
			sizes[k] += r.NumSamples()
		}
		if sizes[k] == 0 {
			closeAll()
			return nil, fmt.Errorf("%w: %s has no samples", ErrMixture, s.name(k))
		}
	}
	takes, err := Takes(spec, sizes)
	if err != nil {
		closeAll()
		return nil, err
	}
	m := &Mixture{}
	var files []*beton.Reader
	var first []int // joined source j's files are files[first[j]:first[j+1]]
	var tags []int64
	var labels []string
	var start uint64
	for k := range spec.Sources {
		if spec.Side(k) {
			continue
		}
		p := all[k]
		p.Start, p.Size, p.Take = start, sizes[k], takes[k]
		start += p.Size
		m.Parts, m.Index = append(m.Parts, p), append(m.Index, k)
		first = append(first, len(files))
		for _, r := range opened[k] {
			files = append(files, r)
			tags, labels = append(tags, int64(k)), append(labels, spec.Sources[k].label(k))
		}
	}
	if len(m.Parts) == 0 {
		closeAll()
		return nil, fmt.Errorf("%w: every source has weight 0: an epoch takes samples of none", ErrMixture)
	}
	first = append(first, len(files))
	pick, names, err := fitFields(spec, m.Index, files, first)
	if err != nil {
		closeAll()
		return nil, err
	}
	name := fmt.Sprintf("mixture of %d sources", len(spec.Sources))
	r, err := beton.JoinWith(name, files, beton.JoinOptions{Fields: pick, Names: names, Tag: spec.SourceField,
		Tags: tags, MixedPageSizes: true, Labels: labels})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m.Reader = r
	for _, k := range m.Index {
		opened[k] = nil // r owns them
	}
	for k := range spec.Sources {
		if !spec.Side(k) {
			continue
		}
		sr, err := openSide(spec, k, opened[k])
		if err != nil {
			for _, rs := range opened[k:] {
				for _, r := range rs {
					r.Close()
				}
			}
			m.Close()
			return nil, err
		}
		opened[k] = nil // sr owns them
		m.Side = append(m.Side, Side{Name: all[k].Name, Files: all[k].Files, Index: k, Reader: sr})
	}
	return m, nil
}

// openSide joins the files of side source k into a reader of its own, with
// its renames and drops; no other source's fields constrain it.
func openSide(spec Spec, k int, files []*beton.Reader) (*beton.Reader, error) {
	s := &spec.Sources[k]
	for _, other := range files[1:] {
		if err := sameFields(files[0], other); err != nil {
			return nil, fmt.Errorf("%w: %s: its files differ: %v", ErrMixture, s.name(k), err)
		}
	}
	view, names, err := project(s, k, files[0])
	if err != nil {
		return nil, err
	}
	idx := make([]int, len(names))
	for j, n := range names {
		idx[j] = view[n]
	}
	pick, labels := make([][]int, len(files)), make([]string, len(files))
	for f := range files {
		pick[f], labels[f] = idx, s.label(k)
	}
	r, err := beton.JoinWith(s.name(k), files, beton.JoinOptions{Fields: pick, Names: names, MixedPageSizes: true,
		Labels: labels})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name(k), err)
	}
	return r, nil
}

// fitFields checks that the files of each joined source (idx: their
// places among spec's sources) have one set of fields, applies each
// source's renames and drops, and checks that every source then has the
// first one's fields, of the same kinds. It returns, per file, the index of
// each mixture field, and the mixture's field names (the first source's
// order).
func fitFields(spec Spec, idx []int, files []*beton.Reader, first []int) ([][]int, []string, error) {
	views := make([]map[string]int, len(idx)) // mixture name -> field index, per joined source
	var names []string
	for j, k := range idx {
		s := &spec.Sources[k]
		r := files[first[j]]
		for _, other := range files[first[j]+1 : first[j+1]] {
			if err := sameFields(r, other); err != nil {
				return nil, nil, fmt.Errorf("%w: %s: its files differ: %v", ErrMixture, s.name(k), err)
			}
		}
		view, order, err := project(s, k, r)
		if err != nil {
			return nil, nil, err
		}
		views[j] = view
		if j == 0 {
			names = order
		}
	}
	if slices.Contains(names, spec.SourceField) {
		return nil, nil, fmt.Errorf("%w: source_field %q is also a field of the sources: name it otherwise", ErrMixture, spec.SourceField)
	}
	ref, r0 := &spec.Sources[idx[0]], files[0]
	for j := 1; j < len(idx); j++ {
		k := idx[j]
		s, r := &spec.Sources[k], files[first[j]]
		for _, n := range names {
			f, ok := views[j][n]
			if !ok {
				return nil, nil, fmt.Errorf("%w: %s has no field %q (its fields: %s), which %s has: rename one of its fields to %q or drop %q from the other sources",
					ErrMixture, s.name(k), n, fieldList(views[j]), ref.name(idx[0]), n, n)
			}
			x, y := r0.Fields[views[0][n]], r.Fields[f]
			if !beton.SameKind(&x, &y) {
				x.Name, y.Name = n, n
				return nil, nil, fmt.Errorf("%w: field %q is %s in %s, %s in %s", ErrMixture, n,
					kindOf(&y, r.Fields[f].Name), s.name(k), kindOf(&x, r0.Fields[views[0][n]].Name), ref.name(idx[0]))
			}
		}
		for n := range views[j] {
			if !slices.Contains(names, n) {
				return nil, nil, fmt.Errorf("%w: %s has a field %q, which %s does not have (its fields: %s): drop it or rename it",
					ErrMixture, s.name(k), n, ref.name(idx[0]), strings.Join(names, ", "))
			}
		}
	}
	pick := make([][]int, len(files))
	for j := range idx {
		at := make([]int, len(names))
		for i, n := range names {
			at[i] = views[j][n]
		}
		for f := first[j]; f < first[j+1]; f++ {
			pick[f] = at
		}
	}
	return pick, names, nil
}

// project applies source k's renames and drops to the fields of its file
// r: the mixture name of each field kept (to its index) and their order.
func project(s *Source, k int, r *beton.Reader) (map[string]int, []string, error) {
	has := func(n string) bool { return r.FieldIndex(n) >= 0 }
	for _, n := range s.Drop {
		if !has(n) {
			return nil, nil, fmt.Errorf("%w: %s: drop names %q, which is not one of its fields (%s)", ErrMixture, s.name(k), n, storedList(r))
		}
	}
	for from, to := range s.Rename {
		if !has(from) {
			return nil, nil, fmt.Errorf("%w: %s: rename names %q, which is not one of its fields (%s)", ErrMixture, s.name(k), from, storedList(r))
		}
		if to == "" {
			return nil, nil, fmt.Errorf("%w: %s: rename gives field %q an empty name", ErrMixture, s.name(k), from)
		}
	}
	view := map[string]int{}
	var names []string
	for f, d := range r.Fields {
		if slices.Contains(s.Drop, d.Name) {
			continue
		}
		n := d.Name
		if to, ok := s.Rename[n]; ok {
			n = to
		}
		if _, dup := view[n]; dup {
			return nil, nil, fmt.Errorf("%w: %s: two fields would be named %q after rename", ErrMixture, s.name(k), n)
		}
		view[n] = f
		names = append(names, n)
	}
	return view, names, nil
}

// sameFields reports the first difference between the fields of a and b,
// files of one source.
func sameFields(a, b *beton.Reader) error {
	for i := range max(len(a.Fields), len(b.Fields)) {
		switch {
		case i >= len(b.Fields):
			return fmt.Errorf("%s has no field %q of %s", b.Path, a.Fields[i].Name, a.Path)
		case i >= len(a.Fields):
			return fmt.Errorf("%s has a field %q, which %s does not have", b.Path, b.Fields[i].Name, a.Path)
		case a.Fields[i].Name != b.Fields[i].Name || !beton.SameKind(&a.Fields[i], &b.Fields[i]):
			return fmt.Errorf("%s: field %d is %s, %s has %s", b.Path, i, beton.Describe(&b.Fields[i]), a.Path,
				beton.Describe(&a.Fields[i]))
		}
	}
	return nil
}

// kindOf says what a field is, without its name (the message names it):
// "IntField", "NDArrayField <f4 [2]", and the name it is stored under when
// a rename gave it another.
func kindOf(d *field.Desc, stored string) string {
	s := d.Type.String()
	if d.Arrays() {
		s += fmt.Sprintf(" %s %v", d.DType, d.Shape)
	}
	if len(d.Args) > 0 {
		s += " with other arguments"
	}
	if stored != d.Name {
		s += fmt.Sprintf(" (stored as %q)", stored)
	}
	return s
}

func fieldList(view map[string]int) string {
	names := make([]string, 0, len(view))
	for n := range view {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return view[names[i]] < view[names[j]] })
	return strings.Join(names, ", ")
}

func storedList(r *beton.Reader) string {
	names := make([]string, len(r.Fields))
	for i, d := range r.Fields {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

// checkWeights checks what can be checked of spec's weights before the
// sources' sizes are known.
func checkWeights(spec Spec) error {
	for k := range spec.Sources {
		s := &spec.Sources[k]
		n := 0
		for _, set := range []bool{s.Proportion != nil, s.Repeat != nil, s.Choose != nil} {
			if set {
				n++
			}
		}
		if n > 1 {
			return fmt.Errorf("%w: %s: give at most one of proportion, repeat and choose", ErrMixture, s.name(k))
		}
		if n > 0 && spec.Weights != nil {
			return fmt.Errorf("%w: %s has a weight of its own and the mixture has weights: give one or the other", ErrMixture, s.name(k))
		}
		if p := s.Proportion; p != nil && !positive(*p) && *p != 0 {
			return fmt.Errorf("%w: %s: proportion %v must be a positive number (or 0: read by operations only)", ErrMixture, s.name(k), *p)
		}
		if r := s.Repeat; r != nil && !positive(*r) && *r != 0 {
			return fmt.Errorf("%w: %s: repeat %v must be a positive number (or 0: read by operations only)", ErrMixture, s.name(k), *r)
		}
		if c := s.Choose; c != nil && *c < 0 {
			return fmt.Errorf("%w: %s: choose %d must be a positive number of samples (or 0: read by operations only)", ErrMixture, s.name(k), *c)
		}
	}
	if spec.Weights != nil {
		if len(spec.Weights) != len(spec.Sources) {
			return fmt.Errorf("%w: %d weights for %d sources", ErrMixture, len(spec.Weights), len(spec.Sources))
		}
		for k, w := range spec.Weights {
			if !positive(w) && w != 0 {
				return fmt.Errorf("%w: weight %v of %s must be a positive number (or 0: read by operations only)", ErrMixture, w, spec.Sources[k].name(k))
			}
		}
	}
	if spec.EpochSize < 0 {
		return fmt.Errorf("%w: epoch_size %d must be positive", ErrMixture, spec.EpochSize)
	}
	return nil
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// proportionTolerance is how far relative proportions may sum from 1
// (0.1 + 0.2 + 0.7 is not 1 in floating point).
const proportionTolerance = 1e-6

// Takes returns how many samples each source gives an epoch, for sources
// of the given sizes:
//
//   - Weights, or a proportion on every source (relative): the epoch has
//     EpochSize samples (default: the sizes' sum), split by the weights
//     (normalized) or proportions (which must sum to 1).
//   - No weights at all: every source once; with EpochSize, an epoch of
//     that many samples split in proportion to the sizes (as Streaming).
//   - repeat and choose (absolute), the others once: repeat × size
//     (rounded down, as Streaming) and choose samples; no EpochSize.
//   - proportions beside absolute sources: the absolute sources make
//     1 - (the proportions' sum) of the epoch, which sets its size; no
//     EpochSize.
//
// Relative shares are rounded by largest remainder (ties to the lower
// source index), so the takes sum exactly to the epoch size. A source
// whose share rounds to no sample is an error. A side source (weight 0)
// takes 0, the others as if it were not there.
func Takes(spec Spec, sizes []uint64) ([]uint64, error) {
	if err := checkWeights(spec); err != nil {
		return nil, err
	}
	if len(sizes) != len(spec.Sources) {
		return nil, fmt.Errorf("%w: %d sizes for %d sources", ErrMixture, len(sizes), len(spec.Sources))
	}
	var idx []int
	for k := range spec.Sources {
		if !spec.Side(k) {
			idx = append(idx, k)
		}
	}
	if len(idx) == 0 {
		return nil, fmt.Errorf("%w: every source has weight 0: an epoch takes samples of none", ErrMixture)
	}
	if len(idx) == len(spec.Sources) {
		return takes(spec, sizes)
	}
	sub := Spec{EpochSize: spec.EpochSize, SourceField: spec.SourceField, at: idx}
	subSizes := make([]uint64, len(idx))
	for j, k := range idx {
		sub.Sources, subSizes[j] = append(sub.Sources, spec.Sources[k]), sizes[k]
		if spec.Weights != nil {
			sub.Weights = append(sub.Weights, spec.Weights[k])
		}
	}
	got, err := takes(sub, subSizes)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(spec.Sources))
	for j, k := range idx {
		out[k] = got[j]
	}
	return out, nil
}

func takes(spec Spec, sizes []uint64) ([]uint64, error) {
	n := len(sizes)
	var sum uint64
	for k, s := range sizes {
		if s == 0 {
			return nil, fmt.Errorf("%w: %s has no samples", ErrMixture, spec.nameOf(k))
		}
		sum += s
	}
	shares := make([]float64, n) // relative shares, where given
	relative, absolute := 0, 0
	var psum float64
	for k := range spec.Sources {
		s := &spec.Sources[k]
		switch {
		case spec.Weights != nil:
			shares[k] = spec.Weights[k]
			relative++
		case s.Proportion != nil:
			shares[k] = *s.Proportion
			psum += *s.Proportion
			relative++
		case s.Repeat != nil || s.Choose != nil:
			absolute++
		}
	}
	takes := make([]uint64, n)
	fixed := func() (uint64, error) { // the absolute (and unweighted) sources' takes
		var total uint64
		for k := range spec.Sources {
			s := &spec.Sources[k]
			switch {
			case shares[k] > 0:
				continue
			case s.Repeat != nil:
				t := math.Floor(*s.Repeat * float64(sizes[k]))
				if t < 1 {
					return 0, fmt.Errorf("%w: %s: repeat %v of %d samples is less than one sample", ErrMixture, spec.nameOf(k), *s.Repeat, sizes[k])
				}
				if t > 1<<40 {
					return 0, fmt.Errorf("%w: %s: repeat %v of %d samples is more than 2^40 samples", ErrMixture, spec.nameOf(k), *s.Repeat, sizes[k])
				}
				takes[k] = uint64(t)
			case s.Choose != nil:
				if *s.Choose > 1<<40 {
					return 0, fmt.Errorf("%w: %s: choose %d is more than 2^40 samples", ErrMixture, spec.nameOf(k), *s.Choose)
				}
				takes[k] = uint64(*s.Choose)
			default:
				takes[k] = sizes[k]
			}
			total += takes[k]
		}
		return total, nil
	}
	switch {
	case relative == n:
		if spec.Weights == nil && math.Abs(psum-1) > proportionTolerance {
			return nil, fmt.Errorf("%w: the proportions sum to %.6g, not 1: each is a share of the epoch "+
				"(for relative weights that need not sum to 1, give the mixture weights=[...] instead)", ErrMixture, psum)
		}
		size := sum
		if spec.EpochSize > 0 {
			size = uint64(spec.EpochSize)
		}
		return split(spec, size, shares, takes)
	case relative == 0 && absolute == 0 && spec.EpochSize > 0:
		for k, s := range sizes {
			shares[k] = float64(s)
		}
		return split(spec, uint64(spec.EpochSize), shares, takes)
	case relative == 0:
		if spec.EpochSize > 0 {
			return nil, fmt.Errorf("%w: epoch_size applies to proportions; sources with repeat or choose make an epoch of their own size", ErrMixture)
		}
		_, err := fixed()
		return takes, err
	default:
		if spec.EpochSize > 0 {
			return nil, fmt.Errorf("%w: epoch_size with proportions beside repeat, choose or unweighted sources: "+
				"those sources set the epoch's size (their samples are 1 - the proportions' sum of it)", ErrMixture)
		}
		if psum >= 1-proportionTolerance {
			return nil, fmt.Errorf("%w: the proportions sum to %.6g; beside sources with repeat, choose or no weight "+
				"they must sum to less than 1 (those sources make the rest of the epoch)", ErrMixture, psum)
		}
		rest, err := fixed()
		if err != nil {
			return nil, err
		}
		size := uint64(math.Round(float64(rest) / (1 - psum)))
		if _, err := split(spec, size-rest, shares, takes); err != nil {
			return nil, err
		}
		return takes, nil
	}
}

// split shares size samples out to the sources with a share (shares[k] >
// 0), in proportion, by largest remainder; the others keep their takes.
func split(spec Spec, size uint64, shares []float64, takes []uint64) ([]uint64, error) {
	if size > 1<<40 {
		return nil, fmt.Errorf("%w: an epoch of %d samples is more than 2^40", ErrMixture, size)
	}
	var total float64
	for _, s := range shares {
		total += s
	}
	type rem struct {
		k    int
		frac float64
	}
	var rems []rem
	var given uint64
	for k, s := range shares {
		if s <= 0 {
			continue
		}
		q := float64(size) * s / total
		takes[k] = uint64(math.Floor(q))
		given += takes[k]
		rems = append(rems, rem{k, q - math.Floor(q)})
	}
	sort.SliceStable(rems, func(i, j int) bool { return rems[i].frac > rems[j].frac })
	for i := 0; given < size; i = (i + 1) % len(rems) {
		takes[rems[i].k]++
		given++
	}
	for i := len(rems) - 1; given > size; i = (i + len(rems) - 1) % len(rems) {
		if takes[rems[i].k] > 0 { // floating point gave one too many
			takes[rems[i].k]--
			given--
		}
	}
	for _, r := range rems {
		if takes[r.k] == 0 {
			return nil, fmt.Errorf("%w: %s: its share %.3g of an epoch of %d samples is less than one sample", ErrMixture,
				spec.nameOf(r.k), shares[r.k]/total, size)
		}
	}
	return takes, nil
}
