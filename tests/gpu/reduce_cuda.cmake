# The CUDA reduction kernels against the CPU kernels; skipped, with the reason, without a GPU
# (the argument checks, and a launch without a device, run everywhere).
weft_test(reduce_cuda_test SOURCES gpu/reduce_cuda_test.cc)
if(WEFT_HAVE_CUDA)
  target_link_libraries(reduce_cuda_test PRIVATE CUDA::cudart)
endif()
