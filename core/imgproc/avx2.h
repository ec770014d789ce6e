// FF_AVX2_BEGIN and FF_AVX2_END compile the functions between them for
// AVX2, which Go picks at run time where the CPU has it; GCC and Clang (the
// wheels are built with Zig's) each have their own pragmas for it.
#ifndef FF_AVX2_H
#define FF_AVX2_H

#ifdef __clang__
#define FF_AVX2_BEGIN _Pragma("clang attribute push(__attribute__((target(\"avx2\"))), apply_to = function)")
#define FF_AVX2_END _Pragma("clang attribute pop")
#else
#define FF_AVX2_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2\")")
#define FF_AVX2_END _Pragma("GCC pop_options")
#endif

#endif
