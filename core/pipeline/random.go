package pipeline

import (
	"math"
	"math/rand/v2"
)

// Gamma samples Gamma(a, 1) by Marsaglia and Tsang's method.
func Gamma(r *rand.Rand, a float64) float64 {
	if a < 1 {
		return Gamma(r, a+1) * math.Pow(r.Float64(), 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + float64(c*x)
		if v <= 0 {
			continue
		}
		v = float64(v * v * v)
		u := r.Float64()
		if u < 1-float64(0.0331*x*x*x*x) || math.Log(u) < float64(0.5*x*x)+float64(d*(1-v+math.Log(v))) {
			return d * v
		}
	}
}

// Beta samples Beta(a, a) as X/(X+Y) with X, Y ~ Gamma(a).
func Beta(r *rand.Rand, a float64) float64 {
	x, y := Gamma(r, a), Gamma(r, a)
	if x+y == 0 {
		return 0.5
	}
	return x / (x + y)
}
