package field

import "errors"

type ImageOptions struct {
	WriteMode           string
	MaxResolution       int
	SmartThreshold      int
	JPEGQuality         int
	CompressProbability float64
	Seed                uint64
}

const (
	ModeJPEG = 0
	ModeRaw  = 1
)

func newImageEncoder(ImageOptions) (Encoder, error) { return nil, errors.New("pending") }
