package beton

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
)

// Every kind of field with heap bytes keeps them when shards are joined:
// the heap pointers of ragged arrays and texts move with their shard as
// the others' do.
func TestJoinMovesEveryHeapPointer(t *testing.T) {
	descs := []field.Desc{
		{Type: field.Ragged, Name: "rows", Target: &field.TargetArgs{DType: "<i4", RowShape: []uint64{2}}},
		{Type: field.Text, Name: "caption"},
		{Type: field.Bytes, Name: "blob"},
	}
	value := func(g int) []field.Value {
		rows := make([]byte, 8*(g%5))
		for k := range rows {
			rows[k] = byte(g + k)
		}
		texts := [][]byte{[]byte(fmt.Sprintf("caption %d", g))}
		if g%3 == 0 {
			texts = append(texts, []byte("a second one"))
		}
		return []field.Value{{Data: rows}, {Texts: texts}, {Data: bytes.Repeat([]byte{byte(g)}, 50_000+g)}}
	}
	dir := t.TempDir()
	var shards []*Reader
	total := 0
	for k, n := range []int{70, 45} { // several 2 MiB pages each
		encs := make([]field.Encoder, len(descs))
		for i, d := range descs {
			var err error
			if encs[i], err = field.NewEncoder(d); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("part-%d.beton", k))
		w, err := Create(path, descs, encs, uint64(n), WriterOptions{PageSize: MinPageSize, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := w.Put(uint64(i), value(total+i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, r)
		total += n
	}
	j, err := Join("joined", shards)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for g := 0; g < total; g++ {
		want := value(g)
		col, heap, err := j.Read(uint64(g), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, rows := field.RaggedRef(col); rows != uint64(len(want[0].Data)/8) || !bytes.Equal(heap, want[0].Data) {
			t.Fatalf("sample %d: ragged rows differ", g)
		}
		col, heap, err = j.Read(uint64(g), 1)
		if err != nil {
			t.Fatal(err)
		}
		m := field.ParseTextMeta(col)
		for c, text := range want[1].Texts {
			got, err := field.TextCaption(m, heap, c)
			if err != nil || !bytes.Equal(got.Text, text) {
				t.Fatalf("sample %d, caption %d: %q (%v), want %q", g, c, got.Text, err, text)
			}
		}
		if _, heap, err = j.Read(uint64(g), 2); err != nil || !bytes.Equal(heap, want[2].Data) {
			t.Fatalf("sample %d: blob differs (%v)", g, err)
		}
	}
}
