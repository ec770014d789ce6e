package loader

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/cache"
	"github.com/ffcv-go/ffcv-go/core/order"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/remote"
)

// SourceStats are what a mixture's source gave (Samples: handed out on
// this rank, after samples skipped for errors) and read: the pages the
// process cache loaded from its files, their bytes and the time the reads
// took (summed over reads that ran at once: BytesRead / ReadNs is the rate
// of one read from the source's storage); requests, body bytes and retries
// of its remote files.
type SourceStats struct {
	Samples      uint64 `json:"samples"`
	PagesRead    uint64 `json:"pages_read"`
	BytesRead    uint64 `json:"bytes_read"`
	ReadNs       int64  `json:"read_ns"`
	Requests     uint64 `json:"requests"`
	BytesFetched uint64 `json:"bytes_fetched"`
	Retries      uint64 `json:"retries"`
}

func (s *SourceStats) add(o SourceStats) {
	s.Samples += o.Samples
	s.PagesRead += o.PagesRead
	s.BytesRead += o.BytesRead
	s.ReadNs += o.ReadNs
	s.Requests += o.Requests
	s.BytesFetched += o.BytesFetched
	s.Retries += o.Retries
}

// mixtureShards checks cfg.Mixture against r and returns the source of
// each of r's files (nil without a mixture).
func mixtureShards(r *beton.Reader, cfg Config) ([]int, error) {
	parts := cfg.Mixture
	if parts == nil {
		return nil, nil
	}
	if cfg.Indices != nil {
		return nil, fmt.Errorf("indices select samples of one dataset; a mixture takes its sources' samples by their weights")
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("a mixture of no sources")
	}
	var end uint64
	for k, p := range parts {
		if p.Start < end || p.Start+p.Size > r.NumSamples() {
			return nil, fmt.Errorf("mixture source %d: samples [%d, %d) overlap another source or lie outside the %d samples of %s",
				k, p.Start, p.Start+p.Size, r.NumSamples(), r.Path)
		}
		if p.Size == 0 && p.Take > 0 {
			return nil, fmt.Errorf("mixture source %d has no samples to take %d from", k, p.Take)
		}
		end = p.Start + p.Size
	}
	shards := r.Shards()
	if shards == nil {
		shards = []*beton.Reader{r}
	}
	out := make([]int, len(shards))
	var start uint64
	for k, s := range shards {
		out[k] = sourceOf(parts, start)
		start += s.NumSamples()
	}
	return out, nil
}

// sourceOf returns the index of the part holding sample id (the first part
// past it if none does).
func sourceOf(parts []order.Part, id uint64) int {
	return sort.Search(len(parts), func(k int) bool { return parts[k].Start+parts[k].Size > id })
}

// SourceOf returns the mixture source of sample id (0 without a mixture).
func (l *Loader) SourceOf(id uint64) int {
	if l.cfg.Mixture == nil {
		return 0
	}
	return sourceOf(l.cfg.Mixture, id)
}

// GlobalSamples is the number of samples of an epoch over all ranks: the
// indices, or a mixture's takes.
func (l *Loader) GlobalSamples() int { return l.numIndices() }

// countSources adds the sources of a batch's n sample ids (its ids buffer)
// to counts.
func (l *Loader) countSources(ids []byte, n int, counts []uint64) {
	for pos := range n {
		counts[sourceOf(l.cfg.Mixture, binary.LittleEndian.Uint64(ids[8*pos:]))]++
	}
}

// remoteByShard is the request counters of each of r's files (zero for
// local ones).
func remoteByShard(r *beton.Reader) []remote.Stats {
	readers := r.Shards()
	if readers == nil {
		readers = []*beton.Reader{r}
	}
	out := make([]remote.Stats, len(readers))
	for k, x := range readers {
		if o, ok := x.Source().(*remote.Object); ok {
			out[k] = o.Stats()
		}
	}
	return out
}

// sourceStats sums an epoch's counters by source: samples handed out,
// pages read per file, and the remote counters of each file now against
// those at the start (io0).
func (l *Loader) sourceStats(samples []uint64, cs cache.Stats, io0 []remote.Stats) []SourceStats {
	out := make([]SourceStats, len(l.cfg.Mixture))
	for k, n := range samples {
		out[k].Samples = n
	}
	now := remoteByShard(l.r)
	for f, src := range l.shardSource {
		if src >= len(out) {
			continue // an empty file after the last source
		}
		if f < len(cs.ShardPages) {
			out[src].PagesRead += cs.ShardPages[f]
			out[src].BytesRead += cs.ShardBytes[f]
			out[src].ReadNs += cs.ShardReadNs[f]
		}
		d := now[f].Sub(io0[f])
		out[src].Requests += d.Requests
		out[src].BytesFetched += d.Bytes
		out[src].Retries += d.Retries
	}
	return out
}

// checkSourcePrograms checks cfg.SourcePrograms against the outputs' own
// programs (see Config.SourcePrograms).
func checkSourcePrograms(r *beton.Reader, cfg Config, progs []*pipeline.Program) error {
	if cfg.SourcePrograms == nil {
		return nil
	}
	if cfg.Mixture == nil {
		return fmt.Errorf("programs by source need a mixture")
	}
	if len(cfg.SourcePrograms) > len(progs) {
		return fmt.Errorf("programs by source for %d outputs, there are %d", len(cfg.SourcePrograms), len(progs))
	}
	for k, alts := range cfg.SourcePrograms {
		if alts == nil {
			continue
		}
		p := progs[k]
		name := r.Fields[p.Field].Name
		if len(alts) > len(cfg.Mixture) {
			return fmt.Errorf("output %d (field %q): programs for %d sources, the mixture has %d", k, name, len(alts), len(cfg.Mixture))
		}
		for j, q := range progs {
			if j != k && q.Field == p.Field {
				return fmt.Errorf("field %q: a pipeline by source, and output %d reads the field too: "+
					"a field with views has one pipeline for all sources", name, j)
			}
		}
		for s, alt := range alts {
			switch {
			case alt == nil:
			case alt.Field != p.Field:
				return fmt.Errorf("source %d: its pipeline of field %q reads field %q", s, name, r.Fields[alt.Field].Name)
			case alt.HasBatchOps():
				return fmt.Errorf("source %d: its pipeline of field %q has batch operations; those of the loader's "+
					"pipeline run on whole batches, of every source", s, name)
			case !slices.Equal(alt.SampleOut.Shape, p.SampleOut.Shape) || alt.SampleOut.DType != p.SampleOut.DType:
				return fmt.Errorf("source %d: its pipeline of field %q gives %v %s samples, the loader's pipeline %v %s: "+
					"a batch holds one shape", s, name, alt.SampleOut.Shape, alt.SampleOut.DType, p.SampleOut.Shape, p.SampleOut.DType)
			}
		}
	}
	return nil
}

// program is the program that runs output k on a sample of source src.
func (l *Loader) program(k, src int) *pipeline.Program {
	if k < len(l.cfg.SourcePrograms) {
		if alts := l.cfg.SourcePrograms[k]; src < len(alts) && alts[src] != nil {
			return alts[src]
		}
	}
	return l.progs[k]
}
