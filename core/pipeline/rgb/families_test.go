package rgb

// The ops of other families that the tests put in programs with these.
import (
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/basic"
	_ "github.com/ffcv-go/ffcv-go/core/pipeline/transform"
)
