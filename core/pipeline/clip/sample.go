package clip

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Short is what a clip takes past the end of a video shorter than it.
type Short int

const (
	Repeat Short = iota // the last frame again
	Loop                // frames from the start again
	Pad                 // black frames
)

// ParseShort reads a policy's name.
func ParseShort(s string) (Short, error) {
	switch s {
	case "repeat", "":
		return Repeat, nil
	case "loop":
		return Loop, nil
	case "pad":
		return Pad, nil
	}
	return 0, fmt.Errorf("short %q must be 'repeat', 'loop' or 'pad'", s)
}

// Sampling is which stored frames make a clip: num frames, step stored
// frames apart (a whole stride, or stored fps / wanted fps), frame k at
// start + floor(k·step).
type Sampling struct {
	Frames int
	Step   float64
	Short  Short
}

// offset is frame k's distance from the clip's start, in stored frames.
func (s Sampling) offset(k int) int { return int(math.Floor(float64(k)*s.Step + 1e-9)) }

// MaxStart is the last start at which the clip fits a video of n frames;
// negative when the video is shorter than the clip.
func (s Sampling) MaxStart(n int) int { return n - 1 - s.offset(s.Frames-1) }

// RandomStart draws a start uniformly over those at which the clip fits; 0
// for a video shorter than the clip, which the Short policy completes.
func (s Sampling) RandomStart(r *rand.Rand, n int) int {
	m := s.MaxStart(n)
	if m <= 0 {
		return 0
	}
	return min(int(r.Float64()*float64(m+1)), m)
}

// EvenStart is the start of clip j of k evenly spaced clips: the middle of
// the j-th of k equal parts of the starts that fit (k = 1: the centre clip).
func (s Sampling) EvenStart(n, j, k int) int {
	m := s.MaxStart(n)
	if m <= 0 {
		return 0
	}
	return int(math.Floor(float64(m) * float64(2*j+1) / float64(2*k)))
}

// Indices writes into dst (len Frames) the stored frame of each clip frame
// for a clip at start in a video of n frames: -1 for a black frame (Pad).
func (s Sampling) Indices(dst []int, n, start int) {
	for k := range dst {
		i := start + s.offset(k)
		if i >= n {
			switch s.Short {
			case Repeat:
				i = n - 1
			case Loop:
				i %= n
			case Pad:
				i = -1
			}
		}
		dst[k] = i
	}
}
