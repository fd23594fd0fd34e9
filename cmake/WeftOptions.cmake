# Resolves the AUTO/ON/OFF back-end options into WEFT_HAVE_* variables and the extra
# libraries the shared libraries link.
set(WEFT_OPTIONAL_LIBS)

function(weft_resolve_option option found what)
  if(${option} STREQUAL "ON" AND NOT ${found})
    message(FATAL_ERROR "${option}=ON but ${what} was not found")
  endif()
endfunction()

# CUDA
set(WEFT_HAVE_CUDA OFF)
if(NOT WEFT_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    set(WEFT_HAVE_CUDA ON)
  endif()
  weft_resolve_option(WEFT_WITH_CUDA WEFT_HAVE_CUDA "the CUDA toolkit")
endif()
if(WEFT_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # Hopper (H100/H200); add more with -DCMAKE_CUDA_ARCHITECTURES
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 20)
  add_compile_definitions(WEFT_HAVE_CUDA=1)
  list(APPEND WEFT_OPTIONAL_LIBS CUDA::cudart)
endif()

# UCX
set(WEFT_HAVE_UCX OFF)
if(NOT WEFT_WITH_UCX STREQUAL "OFF")
  pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
  if(UCX_FOUND)
    set(WEFT_HAVE_UCX ON)
  endif()
  weft_resolve_option(WEFT_WITH_UCX WEFT_HAVE_UCX "UCX (libucx-dev)")
endif()
if(WEFT_HAVE_UCX)
  add_compile_definitions(WEFT_HAVE_UCX=1)
  list(APPEND WEFT_OPTIONAL_LIBS ${CMAKE_DL_LIBS})  # UCX itself is loaded with dlopen, when first used
endif()

# RDMA verbs
set(WEFT_HAVE_IBVERBS OFF)
if(NOT WEFT_WITH_IBVERBS STREQUAL "OFF")
  find_path(IBVERBS_INCLUDE_DIR infiniband/verbs.h)
  find_library(IBVERBS_LIBRARY ibverbs)
  if(IBVERBS_INCLUDE_DIR AND IBVERBS_LIBRARY)
    set(WEFT_HAVE_IBVERBS ON)
  endif()
  weft_resolve_option(WEFT_WITH_IBVERBS WEFT_HAVE_IBVERBS "libibverbs (libibverbs-dev)")
endif()
if(WEFT_HAVE_IBVERBS)
  add_compile_definitions(WEFT_HAVE_IBVERBS=1)
  list(APPEND WEFT_OPTIONAL_LIBS ${IBVERBS_LIBRARY})
endif()

message(STATUS "weft: CUDA=${WEFT_HAVE_CUDA} UCX=${WEFT_HAVE_UCX} IBVERBS=${WEFT_HAVE_IBVERBS}")
