package main

/*
#include <stdint.h>
*/
import "C"

//export ffcvGoRelease
func ffcvGoRelease(key C.uint64_t) { releaseTensorRef(uint64(key)) }
