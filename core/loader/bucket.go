package loader

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/order"
)

// Durations returns every sample's duration as field name of r stores it.
// It is the one place the bucketed order learns durations: an IntField or
// FloatField column (seconds, frames, tokens: any unit max_duration is
// given in), or an AudioField's clips, in seconds (frames / sample rate,
// from their metadata: nothing is decoded).
func Durations(r *beton.Reader, name string) ([]float64, error) {
	f := r.FieldIndex(name)
	if f < 0 {
		names := make([]string, len(r.Fields))
		for i, d := range r.Fields {
			names[i] = d.Name
		}
		return nil, fmt.Errorf("duration field %q is not a field of %s (fields: %v)", name, r.Path, names)
	}
	typ := r.Fields[f].Type
	if typ != field.Int && typ != field.Float && typ != field.Audio {
		return nil, fmt.Errorf("duration field %q is a %s: durations are read from an IntField, a FloatField "+
			"or an AudioField", name, typ)
	}
	out := make([]float64, r.NumSamples())
	for i := range out {
		col, err := r.Column(uint64(i), f)
		if err != nil {
			return nil, fmt.Errorf("duration field %q: %w", name, err)
		}
		switch typ {
		case field.Audio:
			m := field.ParseAudioMeta(col)
			if err := field.CheckAudio(m); err != nil {
				return nil, fmt.Errorf("duration field %q, sample %d: %w", name, i, err)
			}
			out[i] = float64(m.Frames) / float64(m.SampleRate)
		case field.Int:
			out[i] = float64(int64(binary.LittleEndian.Uint64(col)))
		default:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(col))
		}
	}
	return out, nil
}

// newBucketing reads the durations of a bucketed loader and checks that
// every sample it draws from fits a batch.
func (l *Loader) newBucketing() error {
	if l.cfg.Mixture != nil {
		return fmt.Errorf("the bucketed order batches one dataset's samples by duration; a mixture draws its " +
			"sources by weight")
	}
	if l.cfg.DurationField == "" {
		return fmt.Errorf("the bucketed order needs a duration field")
	}
	durs, err := Durations(l.r, l.cfg.DurationField)
	if err != nil {
		return err
	}
	b := order.Bucketing{MaxDuration: l.cfg.MaxDuration, MaxBatch: l.cfg.BatchSize, NumBuckets: l.cfg.NumBuckets}
	ids := l.indices()
	if err := b.Check(ids, durationsOf(durs, ids)); err != nil {
		return fmt.Errorf("duration field %q: %w", l.cfg.DurationField, err)
	}
	l.durations, l.bucketing = durs, &b
	return nil
}

func durationsOf(durs []float64, ids []uint64) []float64 {
	out := make([]float64, len(ids))
	for i, id := range ids {
		out[i] = durs[id]
	}
	return out
}

// batchDuration is the total duration of a batch of sample ids.
func (l *Loader) batchDuration(b []uint64) float64 {
	var t float64
	for _, id := range b {
		t += l.durations[id]
	}
	return t
}

// GlobalBatches is a bucketed epoch's batches over all ranks, in order.
func (l *Loader) GlobalBatches(epoch uint64) [][]uint64 {
	ids := l.indices()
	return order.Bucketed(ids, durationsOf(l.durations, ids), *l.bucketing, l.cfg.Seed, epoch)
}

// RankOrder is this rank's order of an epoch and its batches: batch b is
// ord[bounds[b]:bounds[b+1]].
func (l *Loader) RankOrder(epoch uint64) (ord []uint64, bounds []int, err error) {
	if l.bucketing == nil {
		global, err := l.GlobalOrder(epoch)
		if err != nil {
			return nil, nil, err
		}
		ord = l.Distribute(global)
		return ord, l.fixedBounds(len(ord)), nil
	}
	ord, bounds = flatten(order.DealBatches(l.GlobalBatches(epoch), l.batchDuration, l.cfg.Rank, l.cfg.World,
		l.cfg.DropLast, true))
	return ord, bounds, nil
}

// Batches is the number of batches this rank takes in an epoch.
func (l *Loader) Batches(epoch uint64) (int, error) {
	if l.bucketing == nil {
		return l.Len(l.NumSamples()), nil
	}
	_, bounds, err := l.RankOrder(epoch)
	return len(bounds) - 1, err
}

// ResumeBatches is this rank's order of what stages (see
// order.BatchesTaken) left of a bucketed epoch, dealt at this loader's
// world size without padding (no sample repeats), with the number of
// samples left over all ranks.
func (l *Loader) ResumeBatches(epoch uint64, stages []order.Stage) (ord []uint64, bounds []int, left int, err error) {
	global := l.GlobalBatches(epoch)
	taken, err := order.BatchesTaken(len(global), stages)
	if err != nil {
		return nil, nil, 0, err
	}
	for _, b := range global[taken:] {
		left += len(b)
	}
	ord, bounds = flatten(order.DealBatches(global[taken:], l.batchDuration, l.cfg.Rank, l.cfg.World,
		l.cfg.DropLast, false))
	return ord, bounds, left, nil
}

// splitBatches cuts ord, this rank's order handed back (an elastic
// resume's, from ResumeBatches), into the epoch's batches it is made of.
func (l *Loader) splitBatches(epoch uint64, ord []uint64) ([]int, error) {
	global := l.GlobalBatches(epoch)
	byFirst := map[uint64][]int{}
	for k, b := range global {
		byFirst[b[0]] = append(byFirst[b[0]], k)
	}
	bounds := []int{0}
	for p := 0; p < len(ord); {
		k := slices.IndexFunc(byFirst[ord[p]], func(k int) bool {
			return p+len(global[k]) <= len(ord) && slices.Equal(global[k], ord[p:p+len(global[k])])
		})
		if k < 0 {
			return nil, fmt.Errorf("the order given is not made of the bucketed batches of the epoch "+
				"(at position %d, sample %d)", p, ord[p])
		}
		p += len(global[byFirst[ord[p]][k]])
		bounds = append(bounds, p)
	}
	return bounds, nil
}

// fixedBounds cuts n samples into batches of BatchSize (the last one
// shorter, or dropped with DropLast).
func (l *Loader) fixedBounds(n int) []int {
	nb := l.Len(n)
	bounds := make([]int, nb+1)
	for b := range bounds {
		bounds[b] = min(b*l.cfg.BatchSize, n)
	}
	return bounds
}

func flatten(batches [][]uint64) ([]uint64, []int) {
	bounds := make([]int, 1, len(batches)+1)
	var ord []uint64
	for _, b := range batches {
		ord = append(ord, b...)
		bounds = append(bounds, len(ord))
	}
	return ord, bounds
}
