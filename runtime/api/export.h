// Exporting the C API: the library is built with hidden visibility, so every public entry
// point is marked, and each gets NCCL's "p" profiling alias.
#pragma once

#define WEFT_API extern "C" __attribute__((visibility("default")))
// Defines pncclX as an alias of ncclX; use after ncclX's definition in the same file.
#define WEFT_PROFILING_ALIAS(ret, name, ...) WEFT_API ret p##name(__VA_ARGS__) __attribute__((alias(#name)))
