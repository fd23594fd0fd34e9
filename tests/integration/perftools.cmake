# End to end: the nccl-tests-compatible perf tools other than all_reduce_perf (whose runs are
# in tools.cmake), on the real library under weftrun. A run passes when every rank exits 0
# (the tools exit 1 on any wrong element) AND rank 0 printed "# Out of bounds values : 0 OK";
# as in tools.cmake, "wrong results"/"FAILED"/a non-zero count in the log fail it too.

set(weft_perf_tools_more all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf
                         sendrecv_perf gather_perf scatter_perf hypercube_perf)

if(TARGET weftrun)
  set(perf_fail "FAILED;wrong results;Out of bounds values : [1-9]")
  # sh wrapper: `sh -c SCRIPT perf_run EXTRA CMD...` runs CMD, shows its output, and requires
  # exit 0, the OK line, and the text EXTRA when it is not empty.
  set(perf_expect_ok
      [=[extra=$1; shift; out=$("$@" 2>&1); rc=$?; printf '%s\n' "$out"; [ $rc -eq 0 ] || exit $rc; for want in "# Out of bounds values : 0 OK" "$extra"; do case "$out" in *"$want"*) ;; *) echo "perftools: no '$want' line"; exit 1;; esac; done]=])

  # weft_perf_run(NAME TOOL NRANKS [EXPECT text] ARGS...): one weftrun job of TOOL.
  function(weft_perf_run name tool nranks)
    cmake_parse_arguments(P "" "EXPECT" "" ${ARGN})
    add_test(NAME ${name}
             COMMAND sh -c "${perf_expect_ok}" perf_run "${P_EXPECT}" $<TARGET_FILE:weftrun> -n ${nranks}
                     --timeout 240 $<TARGET_FILE:${tool}> ${P_UNPARSED_ARGUMENTS})
    set_tests_properties(${name} PROPERTIES LABELS integration TIMEOUT 300 ENVIRONMENT "${WEFT_TEST_ENV}"
                                            FAIL_REGULAR_EXPRESSION "${perf_fail}")
  endfunction()

  foreach(tool IN LISTS weft_perf_tools_more)
    if(NOT TARGET ${tool})
      continue()
    endif()
    foreach(n 2 4)
      weft_perf_run(perf.${tool}.np${n} ${tool} ${n} -b 8 -e 1M -f 4 -c 1)
    endforeach()
  endforeach()

  # Buffers from ncclMemAlloc (shared segments that peers map).
  foreach(tool all_gather_perf reduce_scatter_perf)
    if(TARGET ${tool})
      foreach(n 2 4)
        weft_perf_run(perf.${tool}.np${n}_memalloc ${tool} ${n} -b 8 -e 1M -f 4 -c 1 -R 1)
      endforeach()
    endif()
  endforeach()

  # -r: a root other than 0, and -r -1 (every root in turn), with other datatypes and ops.
  foreach(tool broadcast_perf reduce_perf gather_perf scatter_perf)
    if(TARGET ${tool})
      weft_perf_run(perf.${tool}.np4_root3 ${tool} 4 -b 8 -e 64K -f 8 -n 4 -w 1 -c 1 -r 3)
      weft_perf_run(perf.${tool}.np3_every_root ${tool} 3 -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 -r -1 -d half)
    endif()
  endforeach()
  if(TARGET reduce_scatter_perf)
    weft_perf_run(perf.reduce_scatter_perf.np3_all_types_ops reduce_scatter_perf 3
                  -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 -d all -o all)
  endif()
  if(TARGET reduce_perf)
    weft_perf_run(perf.reduce_perf.np3_all_ops reduce_perf 3 -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 -o all -r 2)
  endif()
  # Odd and aggregated runs of the copy collectives.
  foreach(tool all_gather_perf alltoall_perf sendrecv_perf)
    if(TARGET ${tool})
      weft_perf_run(perf.${tool}.np3_agg ${tool} 3 -b 1K -e 256K -f 16 -n 4 -w 1 -m 2 -z 1 -c 1 -d double)
    endif()
  endforeach()
  # hypercube needs a power-of-two rank count; with 3 it prints why and succeeds (nccl-tests).
  if(TARGET hypercube_perf)
    weft_perf_run(perf.hypercube_perf.np3_skips hypercube_perf 3 EXPECT "nRanks 3 is not a power of 2, skipping"
                  -b 8 -e 1K -f 4 -c 1)
  endif()
endif()

# The tools' descriptions against a model of NCCL's semantics (no library: fake entry points
# over threads), for many rank counts, types, ops, roots, sizes and both placements.
if(TARGET weft_perf_core)
  set(weft_perf_tool_sources)
  foreach(tool IN LISTS weft_perf_tools_more)
    list(APPEND weft_perf_tool_sources ${PROJECT_SOURCE_DIR}/perf/${tool}.cc)
  endforeach()
  add_executable(perftools_model_test ${CMAKE_CURRENT_LIST_DIR}/perftools_model_test.cc ${weft_perf_tool_sources})
  target_compile_definitions(perftools_model_test PRIVATE WEFT_PERF_TOOL_REGISTER)
  target_include_directories(perftools_model_test PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(perftools_model_test PRIVATE weft_perf_core GTest::gtest GTest::gtest_main Threads::Threads)
  gtest_discover_tests(perftools_model_test PROPERTIES LABELS integration TIMEOUT 300 DISCOVERY_TIMEOUT 60)
endif()
