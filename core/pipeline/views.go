package pipeline

// Views of one image: programs whose decoders read the same field may
// share the work of decoding each sample (a JPEG's entropy decoding). The
// worker runs a sample's programs one after the other with one Ctx, so the
// first view of a sample starts the shared work and the others join it;
// every view still does its own crop.

// ViewSharer is a decoder that can share each sample's decoding with the
// other programs of a worker that decode its field.
type ViewSharer interface {
	Op
	// ShareViews tells the decoder that other programs decode field too;
	// last when the worker runs it after all of them.
	ShareViews(field int, last bool)
}

// ShareViews tells the ViewSharer decoders of progs that read a field two
// or more of them decode, in order, so that they share each sample's
// decoding.
func ShareViews(progs []*Program) {
	byField := map[int][]ViewSharer{}
	for _, p := range progs {
		if len(p.ops) > 0 {
			if d, ok := p.ops[0].(ViewSharer); ok {
				byField[p.Field] = append(byField[p.Field], d)
			}
		}
	}
	for f, ds := range byField {
		if len(ds) < 2 {
			continue
		}
		for i, d := range ds {
			d.ShareViews(f, i == len(ds)-1) // the worker runs the programs in order
		}
	}
}
