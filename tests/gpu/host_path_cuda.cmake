# Host-memory collectives on a GPU machine create no CUDA context; skipped, with the reason,
# where no GPU is present.
weft_test(host_path_cuda_test SOURCES gpu/host_path_cuda_test.cc)
if(WEFT_HAVE_CUDA)
  target_link_libraries(host_path_cuda_test PRIVATE CUDA::cudart)
endif()
