package pipeline

import (
	"bytes"
	"slices"
	"testing"
)

// drawOp writes one draw of its key into every byte: what a frame gets
// tells which draw it saw.
type drawOp struct{ grow int }

func (d drawOp) Out(in Spec) (Spec, error) {
	return Spec{Shape: []int{in.Shape[0] + d.grow, in.Shape[1], in.Shape[2]}, DType: in.DType}, nil
}

func (d drawOp) InPlace() bool { return d.grow == 0 }

func (d drawOp) Run(c *Ctx, key int, _, out []byte) error {
	v := byte(c.Rand(key).IntN(256))
	for i := range out {
		out[i] = v
	}
	return nil
}

// A lifted op runs on every frame under its one key: the same draw for
// every frame of a clip, a new one for another sample.
func TestLiftDrawsOncePerClip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      Spec
		op      drawOp
		out     []int
		inPlace bool
	}{
		{"clip", Spec{Shape: []int{5, 4, 3, 3}, DType: "|u1", Lead: 1}, drawOp{}, []int{5, 4, 3, 3}, true},
		{"clips, resized", Spec{Shape: []int{2, 3, 4, 3, 3}, DType: "|u1", Lead: 2}, drawOp{grow: 2}, []int{2, 3, 6, 3, 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Lift(tc.op)
			out, err := l.Out(tc.in)
			if err != nil || !slices.Equal(out.Shape, tc.out) || out.Lead != tc.in.Lead || l.InPlace() != tc.inPlace {
				t.Fatalf("Out = %+v, %v; in place %v", out, err, l.InPlace())
			}
			frames := tc.in.Bytes() / Spec{Shape: tc.in.Shape[tc.in.Lead:], DType: "|u1"}.Bytes()
			first := map[byte]bool{}
			for pos := uint64(0); pos < 20; pos++ {
				c := NewCtx()
				c.Pos, c.Seed = pos, 1
				buf := make([]byte, out.Bytes())
				if err := l.Run(c, 3, make([]byte, tc.in.Bytes()), buf); err != nil {
					t.Fatal(err)
				}
				n := len(buf) / frames
				for f := 1; f < frames; f++ {
					if !bytes.Equal(buf[f*n:(f+1)*n], buf[:n]) {
						t.Fatalf("position %d: frame %d drew apart from frame 0", pos, f)
					}
				}
				first[buf[0]] = true
			}
			if len(first) < 10 {
				t.Fatalf("20 clips drew %d values", len(first))
			}
		})
	}
	if _, err := Lift(drawOp{}).Out(Spec{Shape: []int{4, 3, 3}, DType: "|u1"}); err == nil {
		t.Fatal("lifted over no leading dimension")
	}
}
