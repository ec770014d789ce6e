package policy

// imagenetPolicy, cifar10Policy and svhnPolicy are AutoAugment's learnt
// policies: pairs of (op, probability, magnitude bin of 10; -1 for none).
type subPolicy [2]struct {
	op  int
	p   float64
	bin int
}

var imagenetPolicy = []subPolicy{
	{{opPosterize, 0.4, 8}, {opRotate, 0.6, 9}},
	{{opSolarize, 0.6, 5}, {opAutoContrast, 0.6, -1}},
	{{opEqualize, 0.8, -1}, {opEqualize, 0.6, -1}},
	{{opPosterize, 0.6, 7}, {opPosterize, 0.6, 6}},
	{{opEqualize, 0.4, -1}, {opSolarize, 0.2, 4}},
	{{opEqualize, 0.4, -1}, {opRotate, 0.8, 8}},
	{{opSolarize, 0.6, 3}, {opEqualize, 0.6, -1}},
	{{opPosterize, 0.8, 5}, {opEqualize, 1.0, -1}},
	{{opRotate, 0.2, 3}, {opSolarize, 0.6, 8}},
	{{opEqualize, 0.6, -1}, {opPosterize, 0.4, 6}},
	{{opRotate, 0.8, 8}, {opColor, 0.4, 0}},
	{{opRotate, 0.4, 9}, {opEqualize, 0.6, -1}},
	{{opEqualize, 0.0, -1}, {opEqualize, 0.8, -1}},
	{{opInvert, 0.6, -1}, {opEqualize, 1.0, -1}},
	{{opColor, 0.6, 4}, {opContrast, 1.0, 8}},
	{{opRotate, 0.8, 8}, {opColor, 1.0, 2}},
	{{opColor, 0.8, 8}, {opSolarize, 0.8, 7}},
	{{opSharpness, 0.4, 7}, {opInvert, 0.6, -1}},
	{{opShearX, 0.6, 5}, {opEqualize, 1.0, -1}},
	{{opColor, 0.4, 0}, {opEqualize, 0.6, -1}},
	{{opEqualize, 0.4, -1}, {opSolarize, 0.2, 4}},
	{{opSolarize, 0.6, 5}, {opAutoContrast, 0.6, -1}},
	{{opInvert, 0.6, -1}, {opEqualize, 1.0, -1}},
	{{opColor, 0.6, 4}, {opContrast, 1.0, 8}},
	{{opEqualize, 0.8, -1}, {opEqualize, 0.6, -1}},
}

var cifar10Policy = []subPolicy{
	{{opInvert, 0.1, -1}, {opContrast, 0.2, 6}},
	{{opRotate, 0.7, 2}, {opTranslateX, 0.3, 9}},
	{{opSharpness, 0.8, 1}, {opSharpness, 0.9, 3}},
	{{opShearY, 0.5, 8}, {opTranslateY, 0.7, 9}},
	{{opAutoContrast, 0.5, -1}, {opEqualize, 0.9, -1}},
	{{opShearY, 0.2, 7}, {opPosterize, 0.3, 7}},
	{{opColor, 0.4, 3}, {opBrightness, 0.6, 7}},
	{{opSharpness, 0.3, 9}, {opBrightness, 0.7, 9}},
	{{opEqualize, 0.6, -1}, {opEqualize, 0.5, -1}},
	{{opContrast, 0.6, 7}, {opSharpness, 0.6, 5}},
	{{opColor, 0.7, 7}, {opTranslateX, 0.5, 8}},
	{{opEqualize, 0.3, -1}, {opAutoContrast, 0.4, -1}},
	{{opTranslateY, 0.4, 3}, {opSharpness, 0.2, 6}},
	{{opBrightness, 0.9, 6}, {opColor, 0.2, 8}},
	{{opSolarize, 0.5, 2}, {opInvert, 0.0, -1}},
	{{opEqualize, 0.2, -1}, {opAutoContrast, 0.6, -1}},
	{{opEqualize, 0.2, -1}, {opEqualize, 0.6, -1}},
	{{opColor, 0.9, 9}, {opEqualize, 0.6, -1}},
	{{opAutoContrast, 0.8, -1}, {opSolarize, 0.2, 8}},
	{{opBrightness, 0.1, 3}, {opColor, 0.7, 0}},
	{{opSolarize, 0.4, 5}, {opAutoContrast, 0.9, -1}},
	{{opTranslateY, 0.9, 9}, {opTranslateY, 0.7, 9}},
	{{opAutoContrast, 0.9, -1}, {opSolarize, 0.8, 3}},
	{{opEqualize, 0.8, -1}, {opInvert, 0.1, -1}},
	{{opTranslateY, 0.7, 9}, {opAutoContrast, 0.9, -1}},
}

var svhnPolicy = []subPolicy{
	{{opShearX, 0.9, 4}, {opInvert, 0.2, -1}},
	{{opShearY, 0.9, 8}, {opInvert, 0.7, -1}},
	{{opEqualize, 0.6, -1}, {opSolarize, 0.6, 6}},
	{{opInvert, 0.9, -1}, {opEqualize, 0.6, -1}},
	{{opEqualize, 0.6, -1}, {opRotate, 0.9, 3}},
	{{opShearX, 0.9, 4}, {opAutoContrast, 0.8, -1}},
	{{opShearY, 0.9, 8}, {opInvert, 0.4, -1}},
	{{opShearY, 0.9, 5}, {opSolarize, 0.2, 6}},
	{{opInvert, 0.9, -1}, {opAutoContrast, 0.8, -1}},
	{{opEqualize, 0.6, -1}, {opRotate, 0.9, 3}},
	{{opShearX, 0.9, 4}, {opSolarize, 0.3, 3}},
	{{opShearY, 0.8, 8}, {opInvert, 0.7, -1}},
	{{opEqualize, 0.9, -1}, {opTranslateY, 0.6, 6}},
	{{opInvert, 0.9, -1}, {opEqualize, 0.6, -1}},
	{{opContrast, 0.3, 3}, {opRotate, 0.8, 4}},
	{{opInvert, 0.8, -1}, {opTranslateY, 0.0, 2}},
	{{opShearY, 0.7, 6}, {opSolarize, 0.4, 8}},
	{{opInvert, 0.6, -1}, {opRotate, 0.8, 4}},
	{{opShearY, 0.3, 7}, {opTranslateX, 0.9, 3}},
	{{opShearX, 0.1, 6}, {opInvert, 0.6, -1}},
	{{opSolarize, 0.7, 2}, {opTranslateY, 0.6, 7}},
	{{opShearY, 0.8, 4}, {opInvert, 0.8, -1}},
	{{opShearX, 0.7, 9}, {opTranslateY, 0.8, 3}},
	{{opShearY, 0.8, 5}, {opAutoContrast, 0.7, -1}},
	{{opShearX, 0.7, 2}, {opInvert, 0.1, -1}},
}

// autoPolicies are AutoAugment's policies by name.
var autoPolicies = map[string][]subPolicy{"imagenet": imagenetPolicy, "cifar10": cifar10Policy, "svhn": svhnPolicy}
