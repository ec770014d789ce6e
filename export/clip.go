package main

// The clip decoders of VideoField register themselves with the pipeline.
import _ "github.com/ffcv-go/ffcv-go/core/pipeline/clip"
