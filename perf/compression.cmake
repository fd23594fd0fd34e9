# Google Benchmark suite of the codecs (compression/): GB/s of encode/decode on 64 MiB of
# float32 beside memcpy measured in the same run; top-k beside std::nth_element.
if(benchmark_FOUND)
  add_executable(bench_compression ${CMAKE_CURRENT_LIST_DIR}/bench_compression.cc)
  target_link_libraries(bench_compression PRIVATE weft_internal benchmark::benchmark)
endif()

# The CUDA codecs (compression/cuda/) on 64 MiB of device memory beside cudaMemcpyAsync device
# to device; prints "skipped: ..." and exits 0 without a usable device.
if(benchmark_FOUND AND WEFT_HAVE_CUDA)
  add_executable(bench_compression_cuda ${CMAKE_CURRENT_LIST_DIR}/bench_compression_cuda.cc)
  target_link_libraries(bench_compression_cuda PRIVATE weft_internal benchmark::benchmark CUDA::cudart)
endif()
