# Side-by-side benchmarks for perf/compare.py (issue 14): Open MPI's collectives (MPI_Allreduce,
# MPI_Allgather, ...; --collective) measured as all_reduce_perf, all_gather_perf, ... measure
# weft, built when Open MPI's compiler wrapper and headers are found
# (openmpi from Debian: a benchmark dependency, not a build dependency of weft).
find_package(MPI QUIET COMPONENTS CXX)
if(MPI_CXX_FOUND)
  add_executable(mpi_collective_bench ${CMAKE_CURRENT_LIST_DIR}/mpi_collective_bench.cc)
  target_link_libraries(mpi_collective_bench PRIVATE weft_perf_core MPI::MPI_CXX)
  install(TARGETS mpi_collective_bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
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
