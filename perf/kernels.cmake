# Google Benchmark suite of the reduction kernels, with memcpy as the ceiling of the same run.
if(benchmark_FOUND)
  add_executable(bench_reduce ${CMAKE_CURRENT_LIST_DIR}/bench_reduce.cc)
  target_link_libraries(bench_reduce PRIVATE weft_internal benchmark::benchmark)
  # The cost of the always-on collective record (docs/observability.md).
  add_executable(bench_collective_record ${CMAKE_CURRENT_LIST_DIR}/bench_collective_record.cc)
  target_link_libraries(bench_collective_record PRIVATE weft_internal benchmark::benchmark)
endif()

# The CUDA reduction kernels (common/cuda/) on 64 MiB of device memory beside cudaMemcpyAsync
# device to device; prints "skipped: ..." and exits 0 without a usable device.
if(benchmark_FOUND AND WEFT_HAVE_CUDA)
  add_executable(bench_reduce_cuda ${CMAKE_CURRENT_LIST_DIR}/bench_reduce_cuda.cc)
  target_link_libraries(bench_reduce_cuda PRIVATE weft_internal benchmark::benchmark CUDA::cudart)
endif()
