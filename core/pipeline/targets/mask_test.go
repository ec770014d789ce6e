package targets

import (
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// maskColumn is a Mask column of a w×h map stored in size bytes.
func maskColumn(w, h uint32, size uint64, enc byte) []byte {
	col := make([]byte, field.MaskColumnSize)
	binary.LittleEndian.PutUint64(col[8:], size)
	binary.LittleEndian.PutUint32(col[16:], w)
	binary.LittleEndian.PutUint32(col[20:], h)
	col[24] = enc
	return col
}

// A mask whose declared size its stored bytes cannot hold is refused
// before its buffer is allocated: a 10-byte LZ4 heap cannot decode to
// gigabytes, nor can a raw heap hold other than W×H pixels.
func TestMaskCheckedBeforeAllocating(t *testing.T) {
	for _, tc := range []struct {
		name string
		w, h uint32
		item int
		heap int
		enc  byte
	}{
		{"lz4 65535x65535 u2 in 10 bytes", 65535, 65535, 2, 10, field.MaskLZ4},
		{"lz4 20000x20000 u1 in 100 bytes", 20000, 20000, 1, 100, field.MaskLZ4},
		{"raw 30000x30000 u1 in 64 bytes", 30000, 30000, 1, 64, field.MaskRaw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &maskDecoder{item: tc.item}
			heap := make([]byte, tc.heap)
			m := field.ParseMaskMeta(maskColumn(tc.w, tc.h, uint64(tc.heap), tc.enc))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := d.decode(m, heap, &maskBuf{})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, field.ErrData) {
				t.Fatalf("decode = %v, want ErrData", err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
				t.Errorf("%d bytes allocated before refusing", got)
			}
		})
	}
}

// Instance ids renumbered into a uint16 map stop at 65535: more rows are
// an error, not ids that wrap around to 0.
func TestInstanceTableBounded(t *testing.T) {
	keep := make([]bool, 65535)
	for i := range keep {
		keep[i] = true
	}
	ids, err := instanceTable(nil, keep)
	if err != nil || len(ids) != 65536 || ids[65535] != 65535 {
		t.Fatalf("65535 rows: %d ids, last %d, %v", len(ids), ids[len(ids)-1], err)
	}
	keep = append(keep, true)
	if _, err := instanceTable(nil, keep); err == nil || !strings.Contains(err.Error(), "65536 rows") {
		t.Fatalf("65536 rows: %v, want an error", err)
	}
}
