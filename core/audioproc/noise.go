package audioproc

import "math"

// AddNoise adds noise (len(x)) to x at snrDB, as
// torchaudio.functional.add_noise does to one row: the noise scaled so
// that the energies of the first valid samples of x and of the noise
// stand at snrDB decibels. Only those samples change (torchaudio adds the
// scaled noise past its lengths too; here the padding stays zeros). A
// silent noise adds nothing; a silent x gets no noise (scale 0, as
// torchaudio's log10(0) makes it).
func AddNoise(x, noise []float32, valid int, snrDB float64) {
	var es, en float64
	for i, v := range x[:valid] {
		es += float64(v) * float64(v)
		en += float64(noise[i]) * float64(noise[i])
	}
	if en == 0 || es == 0 {
		return
	}
	scale := float32(math.Sqrt(es / en / math.Pow(10, snrDB/10)))
	for i := range x[:valid] {
		x[i] += scale * noise[i]
	}
}
