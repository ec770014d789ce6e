// The HSV kernel for x86-64 (see hsv_kern.h).
#include "hsv_kern.h"
