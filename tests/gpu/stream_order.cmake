# Device-memory collectives in stream order on a real CUDA device (2 and 4 ranks sharing it);
# skipped, with the reason, where no GPU is present.
weft_test(stream_order_cuda_test SOURCES gpu/stream_order_cuda_test.cc LIBS weft_test_support)
if(WEFT_HAVE_CUDA)
  target_link_libraries(stream_order_cuda_test PRIVATE CUDA::cudart)
endif()
