package rgb

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/ffcv-go/ffcv-go/core/field"
	"github.com/ffcv-go/ffcv-go/core/pipeline"
)

// labelRRC is FFCV-SSL's LabelRandomResizedCrop: a decoder of the image
// field that outputs, as int32, (width, height, top, left, crop height, crop
// width) of the crop the rgb_rrc decoder with the same arguments and seed
// takes: that decoder's own draw.
type labelRRC struct{ crop *cropRGB }

func newLabelRRC(env pipeline.Env, raw json.RawMessage) (pipeline.Op, error) {
	d, err := parseCrop(randomCrop, raw)
	if err != nil {
		return nil, err
	}
	if err := pipeline.NeedSeed(raw); err != nil {
		return nil, err
	}
	if err := pipeline.NeedType(env, field.RGBImage); err != nil {
		return nil, err
	}
	return &labelRRC{crop: d}, nil
}

func (l *labelRRC) Out(pipeline.Spec) (pipeline.Spec, error) {
	return pipeline.Spec{Shape: []int{6}, DType: "<i4"}, nil
}

func (l *labelRRC) Run(c *pipeline.Ctx, op int, _, out []byte) error {
	im := imageOf(c.Col)
	if im.w < 1 || im.h < 1 {
		return fmt.Errorf("%w: empty %dx%d image", field.ErrData, im.w, im.h)
	}
	rc, _ := l.crop.draw(c, op, im.w, im.h)
	for i, v := range []int{im.w, im.h, rc.Min.Y, rc.Min.X, rc.Dy(), rc.Dx()} {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(int32(v)))
	}
	return nil
}
