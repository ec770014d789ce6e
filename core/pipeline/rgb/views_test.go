package rgb

import (
	"slices"
	"testing"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/jpeg"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

// Views of one JPEG field decoded one after the other in a worker's Ctx give
// the pixels each gives alone, and entropy-decode fewer restart intervals.
func TestViewsShareEntropyDecoding(t *testing.T) {
	const w, h = 400, 300
	_, enc, col := testImage(t, w, h)
	other, err := jpeg.Encode(make([]byte, w*h*3), w, h, 80)
	if err != nil {
		t.Fatal(err)
	}
	views := []map[string]any{
		{"size": []int{64, 64}, "scale": []float64{0.4, 1}, "ratio": []float64{0.75, 4.0 / 3}},
		{"size": []int{64, 64}, "scale": []float64{0.4, 1}, "ratio": []float64{0.75, 4.0 / 3}},
		{"size": []int{24, 24}, "scale": []float64{0.05, 0.4}, "ratio": []float64{0.75, 4.0 / 3}},
		{"size": []int{24, 24}, "scale": []float64{0.05, 0.4}, "ratio": []float64{0.75, 4.0 / 3}},
	}
	r := optest.Reader(t)
	build := func() ([]*pipeline.Program, []*cropRGB) {
		var progs []*pipeline.Program
		var ds []*cropRGB
		for _, v := range views {
			p := optest.Build(t, r, optest.ImageField, optest.Named{Name: "rgb_rrc", Args: v})
			ds = append(ds, p.Ops()[0].(*cropRGB))
			progs = append(progs, p)
		}
		return progs, ds
	}
	shared, sd := build()
	pipeline.ShareViews(append(shared, optest.Build(t, r, optest.LabelField, optest.Named{Name: "int"})))
	for _, d := range sd {
		if d.shareField != optest.ImageField+1 {
			t.Fatalf("a view of field %d was not marked shared: %d", optest.ImageField, d.shareField)
		}
	}
	if !sd[len(sd)-1].lastView || sd[0].lastView {
		t.Fatal("only the last view should be marked last")
	}
	_, alone := build()
	for _, between := range []bool{false, true} {
		c := pipeline.NewCtx()
		c.Seed = 11
		for pos := uint64(0); pos < 12; pos++ {
			c.Pos = pos
			decoded, separate := 0, 0
			for k := range views {
				got := make([]byte, views[k]["size"].([]int)[0]*views[k]["size"].([]int)[0]*3)
				c.Col, c.Heap = col(field.ModeJPEG), enc
				if err := sd[k].Run(c, k, nil, got); err != nil {
					t.Fatal(err)
				}
				decoded = decoderOf(c).SessionDecodes()
				if between && k == 1 { // a plain decode of another image between views
					c.Heap = other
					if err := alone[2].Run(c, 99, nil, make([]byte, 24*24*3)); err != nil {
						t.Fatal(err)
					}
				}
				// The same view alone, in a fresh worker.
				ac := pipeline.NewCtx()
				ac.Seed, ac.Pos, ac.Col, ac.Heap = 11, pos, col(field.ModeJPEG), enc
				want := make([]byte, len(got))
				if err := alone[k].Run(ac, k, nil, want); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("between=%v pos %d view %d: pixels differ from the view alone", between, pos, k)
				}
				d := decoderOf(ac)
				d.BeginViews() // count what the view decodes on its own
				if err := d.DecodeView(enc, jpeg.View{Crop: alone[k].rect(ac, k, w, h), W: alone[k].ow, H: alone[k].oh,
					Dst: want}, true); err != nil {
					t.Fatal(err)
				}
				separate += d.SessionDecodes()
				ac.Close()
			}
			if !between && decoded >= separate {
				t.Errorf("pos %d: the views entropy-decoded %d intervals, %d on their own", pos, decoded, separate)
			}
		}
		c.Close()
	}
}
