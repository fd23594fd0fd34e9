# ncclMemAlloc on a real GPU (cuMem, collectives on it in stream order); skipped, with the
# reason, where no GPU is present.
weft_test(memalloc_cuda_test SOURCES gpu/memalloc_cuda_test.cc)
if(WEFT_HAVE_CUDA)
  target_link_libraries(memalloc_cuda_test PRIVATE CUDA::cudart)
endif()
