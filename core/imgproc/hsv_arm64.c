// The HSV kernel for arm64 (see hsv_kern.h).
#include "hsv_kern.h"
