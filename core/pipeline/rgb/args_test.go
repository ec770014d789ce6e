package rgb

import (
	"testing"

	"github.com/ffcv-go/ffcv-go/core/pipeline/internal/optest"
)

func TestBadArguments(t *testing.T) {
	optest.CheckBadArgs(t, []optest.BadArgs{
		{Name: "center_crop", Args: map[string]any{"size": []int{0, 4}, "ratio": 1}, Want: "size"},
		{Name: "center_crop", Args: map[string]any{"size": []int{4, 4}, "ratio": 1.5}, Want: "ratio"},
		{Name: "corner_crop", Args: map[string]any{"size": []int{4, 4}, "ratio": 1, "corner": "middle"}, Want: "corner"},
	})
}
