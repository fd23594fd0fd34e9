# Warning and sanitizer flags for weft's C and C++ code (the library, tools, perf and tests).
# CUDA sources get neither: nvcc does not take the host compiler's warning and sanitizer
# flags as its own, and device code cannot be sanitized.

option(WEFT_WERROR "Treat compiler warnings as errors (the CI test command turns this on)" OFF)
set(WEFT_SANITIZE "" CACHE STRING
    "Build with sanitizers: address, undefined, thread, or a comma list such as address,undefined")

set(weft_warning_flags -Wall -Wextra)
if(WEFT_WERROR)
  list(APPEND weft_warning_flags -Werror)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${weft_warning_flags}>")

if(WEFT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "WEFT_FUZZ needs clang (libFuzzer): configure with CMAKE_CXX_COMPILER=clang++")
  endif()
  # Every object is instrumented for coverage; only the fuzz targets link libFuzzer's main.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>")
endif()

if(WEFT_SANITIZE)
  string(REPLACE "," ";" weft_sanitizers "${WEFT_SANITIZE}")
  foreach(sanitizer IN LISTS weft_sanitizers)
    if(NOT sanitizer MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "WEFT_SANITIZE: unknown sanitizer '${sanitizer}' "
                          "(address, undefined, thread, or a comma list)")
    endif()
  endforeach()
  if("thread" IN_LIST weft_sanitizers AND "address" IN_LIST weft_sanitizers)
    message(FATAL_ERROR "WEFT_SANITIZE: thread and address cannot be combined")
  endif()
  string(REPLACE ";" "," weft_sanitizers "${weft_sanitizers}")
  # -g1: line tables only, which is what a sanitizer's stack needs (file:line); full debug
  # information made these builds a third slower to compile (CI builds two of them).
  set(weft_sanitize_flags -fsanitize=${weft_sanitizers} -fno-omit-frame-pointer -g1)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${weft_sanitize_flags}>")
  if(WEFT_WERROR AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC's manual: sanitizers raise the rate of false -Wmaybe-uninitialized (GCC 12 reports
    # one inside <regex>); it stays a warning, not an error, in sanitizer builds only.
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-Wno-error=maybe-uninitialized>")
    if(WEFT_SANITIZE MATCHES "thread")
      # GCC 12 warns (-Wtsan) that ThreadSanitizer does not model std::atomic_thread_fence, which
      # libstdc++'s own headers use; the warning names code weft cannot change.
      add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-Wno-tsan>")
    endif()
  endif()
  # Every C/C++-linked target (the shared libraries too) links the sanitizer run time.
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:-fsanitize=${weft_sanitizers}>")
  message(STATUS "weft: sanitizers ${weft_sanitizers}")
endif()
