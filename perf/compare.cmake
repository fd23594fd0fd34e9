# Side-by-side benchmarks for perf/compare.py (issue 14): MPI_Allreduce measured as
# all_reduce_perf measures weft, built when Open MPI's compiler wrapper and headers are found
# (openmpi from Debian: a benchmark dependency, not a build dependency of weft).
find_package(MPI QUIET COMPONENTS CXX)
if(MPI_CXX_FOUND)
  add_executable(mpi_allreduce_bench ${CMAKE_CURRENT_LIST_DIR}/mpi_allreduce_bench.cc)
  target_link_libraries(mpi_allreduce_bench PRIVATE weft_perf_core MPI::MPI_CXX)
  install(TARGETS mpi_allreduce_bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
else()
  message(STATUS "weft: Open MPI not found (libopenmpi-dev): perf/compare.py will compare without it")
endif()

# Gloo's side (libgloo-dev from Debian: a benchmark dependency).
find_package(Gloo QUIET)
if(TARGET gloo)
  add_executable(gloo_allreduce_bench ${CMAKE_CURRENT_LIST_DIR}/gloo_allreduce_bench.cc)
  target_link_libraries(gloo_allreduce_bench PRIVATE weft_perf_core gloo)
  install(TARGETS gloo_allreduce_bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
else()
  message(STATUS "weft: Gloo not found (libgloo-dev): perf/compare.py will compare without it")
endif()
