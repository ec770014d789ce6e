package field

// Image storage modes in the RGBImage column.
const (
	ModeJPEG = 0
	ModeRaw  = 1
)

// ImageOptions are RGBImageField's write options, with FFCV 1.0's meaning.
// The encoder that applies them is package imageenc.
type ImageOptions struct {
	WriteMode           string // "raw", "jpg", "smart" or "proportion"
	MaxResolution       int    // 0: keep the size
	SmartThreshold      int    // 0: none ("smart" then stores raw)
	JPEGQuality         int
	CompressProbability float64
	Seed                uint64 // for "proportion"; per-sample draws make output independent of workers
	// KeepSourceJPEG stores a JPEG source file's bytes unchanged when it
	// needs no resize, is to be stored as JPEG and decodes cleanly, instead
	// of re-encoding it (FFCV always re-encodes).
	KeepSourceJPEG bool
	// SpliceKept stores a kept 4:2:0 YCbCr source (KeepSourceJPEG) as its
	// own coefficients and tables in one scan with restart markers
	// (jpeg.Decoder.Transcode at quality 100, which changes no step); any
	// other keeps its bytes. The same pixels, and a crop entropy-decodes
	// only the intervals under it.
	SpliceKept bool
	// ReencodePixels re-encodes a JPEG source that needs no resize from its
	// decoded pixels, as FFCV does. By default such a source (4:2:0 YCbCr)
	// is transcoded instead: requantized to JPEGQuality's tables in the DCT
	// domain (jpeg.Decoder.Transcode), which is faster and closer to it.
	ReencodePixels bool
	// KeepScans keeps a transcoded source's own scan when no step changes,
	// even without restart markers lined up with MCU rows (see
	// jpeg.Decoder.Transcode): faster to write, slower to crop at load time.
	KeepScans bool
}
