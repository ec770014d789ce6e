package imgproc

// Linspace32 is element i of torch.linspace(start, end, steps) in float32,
// as torchvision computes its policies' magnitude bins. It follows torch's
// scalar kernel: the first half of the elements step up from start, the
// rest down from end. (torch's vectorised kernel steps up within each
// vector, so a few elements can differ from it by one ulp.)
func Linspace32(start, end float64, steps, i int) float64 {
	if steps == 1 {
		return float64(float32(start))
	}
	s, e := float32(start), float32(end)
	step := (e - s) / float32(steps-1)
	if i < steps/2 {
		return float64(s + float32(step*float32(i)))
	}
	return float64(e - float32(step*float32(steps-i-1)))
}
