package basic

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// The decoders read their fields' samples, and refuse other fields and
// arguments.
func TestDecoders(t *testing.T) {
	r := optest.Reader(t)
	p := optest.Build(t, r, optest.LabelField, optest.Named{Name: "int"})
	if p.Out.DType != "<i8" || p.Out.Bytes() != 8 {
		t.Fatalf("int decodes %v", p.Out)
	}
	var s pipeline.Scratch
	for i := uint64(0); i < 2; i++ {
		col, err := r.Column(i, optest.LabelField)
		if err != nil {
			t.Fatal(err)
		}
		c := pipeline.NewCtx()
		c.Sample, c.Col = i, col
		out := make([]byte, 8)
		if err := p.Run(c, &s, nil, out); err != nil {
			t.Fatal(err)
		}
		if v := binary.LittleEndian.Uint64(out); v != i {
			t.Fatalf("sample %d decodes as %d", i, v)
		}
	}
	for _, tc := range []struct {
		field int
		spec  string
		want  string
	}{
		{optest.LabelField, `{"op": "float"}`, "cannot decode a"},
		{optest.ImageField, `{"op": "int"}`, "cannot decode a"},
		{optest.ImageField, `{"op": "ndarray"}`, "cannot decode a"},
		{optest.LabelField, `{"op": "bytes"}`, "cannot decode a"},
		{optest.LabelField, `{"op": "int", "dtype": "<i4"}`, `unknown field "dtype"`},
	} {
		_, err := pipeline.Build(r, tc.field, []json.RawMessage{json.RawMessage(tc.spec)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s on field %d: got %v, want an error about %q", tc.spec, tc.field, err, tc.want)
		}
	}
}
