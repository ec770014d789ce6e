package main

import (
	"github.com/ffcv-go/ffcv-go/core/beton"
	"github.com/ffcv-go/ffcv-go/core/field"
)

// openPath opens the one .beton file p names for reading. Every open of a
// dataset file goes through here: the place for other kinds of paths.
func openPath(p string, custom map[string]field.Column) (*beton.Reader, error) {
	return beton.Open(p, custom)
}
