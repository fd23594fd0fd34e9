# Tests of the tools: weftrun (launcher) and the perf tools' harness.
# These link only the tools' own libraries, not weft_internal, so they build and pass while the
# library is still incomplete -- except the end-to-end perf runs at the bottom, which need it.

# weft_tools_gtest(NAME SOURCES... LIBS ...): a GoogleTest executable for the tools.
function(weft_tools_gtest name)
  cmake_parse_arguments(T "SERIAL" "TIMEOUT" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set(serial FALSE)
  if(T_SERIAL)  # as weft_test's SERIAL (tests/CMakeLists.txt)
    set(serial TRUE)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${weft_test_folder}" TIMEOUT ${T_TIMEOUT} RUN_SERIAL ${serial}
                       DISCOVERY_TIMEOUT 60)
endfunction()

if(TARGET weftrun)
  add_executable(weftrun_test_helper ${CMAKE_CURRENT_LIST_DIR}/weftrun_test_helper.cc)

  weft_tools_gtest(launcher_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/launcher_test.cc LIBS weft_launcher)

  weft_tools_gtest(weftrun_test SERIAL SOURCES ${CMAKE_CURRENT_LIST_DIR}/weftrun_test.cc TIMEOUT 60)
  target_compile_definitions(weftrun_test PRIVATE WEFTRUN_PATH="$<TARGET_FILE:weftrun>"
                                                  HELPER_PATH="$<TARGET_FILE:weftrun_test_helper>")
  add_dependencies(weftrun_test weftrun weftrun_test_helper)
endif()

if(TARGET weft_perf_core)
  weft_tools_gtest(perf_harness_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/perf_harness_test.cc
                   LIBS weft_perf_core)
  weft_tools_gtest(perf_json_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/perf_json_test.cc LIBS weft_perf_core)
endif()

# End to end: the perf tools on the real library, under weftrun. #wrong must be 0 everywhere;
# the tools exit non-zero on any wrong element, and "FAILED" marks a failed check in the log.
if(TARGET all_reduce_perf AND TARGET weftrun)
  set(perf_fail "FAILED;wrong results;Out of bounds values : [1-9]")
  add_test(NAME perf.all_reduce_perf.np1
           COMMAND $<TARGET_FILE:all_reduce_perf> -b 8 -e 64K -f 4 -n 5 -w 1 -c 1)
  add_test(NAME perf.all_reduce_perf.np2
           COMMAND $<TARGET_FILE:weftrun> -n 2 --timeout 240 $<TARGET_FILE:all_reduce_perf> -b 8 -e 1M -f 4 -c 1)
  add_test(NAME perf.all_reduce_perf.np3_all_types_ops
           COMMAND $<TARGET_FILE:weftrun> -n 3 --timeout 240 $<TARGET_FILE:all_reduce_perf>
                   -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 -d all -o all)
  add_test(NAME perf.all_reduce_perf.np4_agg_blocking
           COMMAND $<TARGET_FILE:weftrun> -n 4 --timeout 240 $<TARGET_FILE:all_reduce_perf>
                   -b 1K -e 256K -f 16 -n 4 -w 1 -m 2 -z 1 -a 2 -c 1)
  # Buffers from ncclMemAlloc (shared segments peers map).
  add_test(NAME perf.all_reduce_perf.np2_memalloc
           COMMAND $<TARGET_FILE:weftrun> -n 2 --timeout 240 $<TARGET_FILE:all_reduce_perf>
                   -b 8 -e 1M -f 32 -n 4 -w 1 -R 1 -c 1)
  # -J and -I: the documents validate against perf/nccl_tests_json.schema.json beside nccl-tests'
  # own (the fixture), with the same key paths, and agree with the printed table.
  if(TARGET alltoall_perf)
    add_test(NAME perf.json_matches_nccl_tests
             COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/perf_json_e2e.py --weftrun $<TARGET_FILE:weftrun>
                     --tools $<TARGET_FILE_DIR:all_reduce_perf> --schema ${PROJECT_SOURCE_DIR}/perf/nccl_tests_json.schema.json
                     --fixture ${PROJECT_SOURCE_DIR}/tests/fixtures/perf/nccl_tests_2.19.6_all_reduce_I1.json)
    set_tests_properties(perf.json_matches_nccl_tests PROPERTIES LABELS integration TIMEOUT 300
                                                                 ENVIRONMENT "${WEFT_TEST_ENV}")
  endif()
  # WEFT_TRACE: each rank's trace parses as JSON, with one span per collective the tool called,
  # in order, and step spans on other tracks, each inside its collective's span (every call has
  # them but the one-shot all-reduces, which have no schedule).
  add_test(NAME observability.trace_is_json
           COMMAND sh -c [=[dir=$(mktemp -d) && WEFT_TRACE=$dir/trace.%p.json "$1" -n 2 --timeout 120 "$2" -b 8 -e 64K -f 8 -n 3 -w 1 -c 1 >/dev/null && /usr/bin/python3 -c 'import json, sys
for path in sys.argv[1:]:
    events = json.load(open(path))["traceEvents"]
    spans = [e for e in events if e["ph"] == "X" and e["cat"] == "collective"]
    steps = [e for e in events if e["ph"] == "X" and e["cat"] == "step"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert len(spans) > 40 and all(e["dur"] >= 0 and e["name"] == "allreduce" for e in spans), path
    assert [e["args"]["sequence"] for e in spans] == list(range(len(spans))), path
    assert any(n.startswith("rank ") for n in names), names
    call = {e["args"]["sequence"]: e for e in spans}
    scheduled = {e["args"]["sequence"] for e in spans if e["args"]["algorithm"] != "one-shot"}
    assert scheduled and scheduled <= {e["args"]["sequence"] for e in steps}, path
    assert all(e["tid"] != call[e["args"]["sequence"]]["tid"] for e in steps), path
    assert all(call[e["args"]["sequence"]]["ts"] - 0.05 <= e["ts"] and e["ts"] + e["dur"] <= call[e["args"]["sequence"]]["ts"] + call[e["args"]["sequence"]]["dur"] + 0.05 for e in steps), path
    print(path, len(spans), "spans,", len(steps), "step spans")' $dir/trace.*.json && [ $(ls $dir | wc -l) -eq 2 ] && rm -r $dir]=] trace_is_json $<TARGET_FILE:weftrun> $<TARGET_FILE:all_reduce_perf>)
  set_tests_properties(observability.trace_is_json PROPERTIES LABELS integration TIMEOUT 180
                                                             ENVIRONMENT "${WEFT_TEST_ENV}")
  set_tests_properties(perf.all_reduce_perf.np1 perf.all_reduce_perf.np2
                       perf.all_reduce_perf.np3_all_types_ops perf.all_reduce_perf.np4_agg_blocking
                       perf.all_reduce_perf.np2_memalloc
                       PROPERTIES LABELS integration TIMEOUT 300 FAIL_REGULAR_EXPRESSION "${perf_fail}")
endif()

# perf/fit_link_model.py fitted to the simulator's times for known Memory terms (with +-3%
# noise) recovers them within 10%, and the tuning file it writes reads back as the fit.
if(TARGET weft-info)
  add_test(NAME perf.fit_link_model_recovers_known_terms
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/perf/fit_link_model.py ${CMAKE_BINARY_DIR} --simulate-known 0.8,12)
  set_tests_properties(perf.fit_link_model_recovers_known_terms PROPERTIES LABELS integration TIMEOUT 120)
  # tools/scripts/characterize_report.py on synthetic weft-characterize documents made from known
  # terms: names the slow host, its pairs, a slow rank and a noisy row; regressions against a
  # baseline; the per-class fit and its tuning file read back by weft-info; sane PNGs; a
  # self-contained HTML page. Skipped (77) without matplotlib.
  add_test(NAME tools.characterize_report.synthetic_runs
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/characterize_report_test.py ${CMAKE_BINARY_DIR})
  set_tests_properties(tools.characterize_report.synthetic_runs PROPERTIES LABELS integration TIMEOUT 120
                                                                           SKIP_RETURN_CODE 77)
endif()

# weft-info: the plan names the cost model's choice for collectives other than all-reduce, prints
# a rank's schedule, and refuses an algorithm the collective does not have.
if(TARGET weft-info)
  set(weft_info_topo ${PROJECT_SOURCE_DIR}/tests/fixtures/topology/dgx_h100.xml)
  add_test(NAME tools.weft_info.allgather_large_is_ring
           COMMAND weft-info plan allgather 1G --ranks 64 --ranks-per-node 8 --topo ${weft_info_topo})
  set_tests_properties(tools.weft_info.allgather_large_is_ring PROPERTIES LABELS integration PASS_REGULAR_EXPRESSION "chosen: ring")
  add_test(NAME tools.weft_info.allgather_one_channel_is_hier
           COMMAND weft-info plan allgather 1G --ranks 64 --ranks-per-node 8 --topo ${weft_info_topo})
  set_tests_properties(tools.weft_info.allgather_one_channel_is_hier PROPERTIES LABELS integration
                       ENVIRONMENT NCCL_MAX_NCHANNELS=1 PASS_REGULAR_EXPRESSION "chosen: hier")
  add_test(NAME tools.weft_info.broadcast_small_is_binomial
           COMMAND weft-info plan broadcast 8 --ranks 512 --ranks-per-node 8 --topo ${weft_info_topo} --print-schedule 3)
  set_tests_properties(tools.weft_info.broadcast_small_is_binomial PROPERTIES LABELS integration
                       PASS_REGULAR_EXPRESSION "chosen: binomial.*schedule of rank 3, binomial.*recv +peer 2")
  add_test(NAME tools.weft_info.rejects_foreign_algorithm
           COMMAND weft-info plan allgather 1K --ranks 8 --print-schedule 0 --algo tree)
  set_tests_properties(tools.weft_info.rejects_foreign_algorithm PROPERTIES LABELS integration WILL_FAIL TRUE)
  # With a tuning file, plan shows the default terms' choice beside the tuned one (shared memory
  # ten times faster: the 1 MiB all-reduce of 4 ranks turns from ring to rhd).
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/fast_memory.tuning "link Memory bandwidth_GBps 1000\n")
  add_test(NAME tools.weft_info.plan_shows_default_and_tuned
           COMMAND weft-info plan allreduce 1M --ranks 4)
  set_tests_properties(tools.weft_info.plan_shows_default_and_tuned PROPERTIES LABELS integration
                       ENVIRONMENT WEFT_TUNING_FILE=${CMAKE_CURRENT_BINARY_DIR}/fast_memory.tuning
                       PASS_REGULAR_EXPRESSION "chosen: rhd.*without WEFT_TUNING_FILE: ring, [0-9.]+ us by the default terms \\([0-9.]+ us by the tuned ones\\); tuned: rhd")
endif()

# examples/minimal as a user starts it: weftrun, 1 and 3 ranks, each checking its results.
if(TARGET example_minimal AND TARGET weftrun)
  foreach(n 1 3)
    add_test(NAME examples.minimal.np${n}
             COMMAND $<TARGET_FILE:weftrun> -n ${n} --timeout 60 $<TARGET_FILE:example_minimal>)
    set_tests_properties(examples.minimal.np${n} PROPERTIES LABELS integration TIMEOUT 90
                         FAIL_REGULAR_EXPRESSION "failed|gave")
  endforeach()
endif()

# weft-characterize (issue 16): its pure parts, and end to end on 2 ranks (a short run, a
# budget, Ctrl-C).
if(TARGET weft-characterize)
  weft_tools_gtest(characterize_options_test
                   SOURCES ${CMAKE_CURRENT_LIST_DIR}/characterize_options_test.cc
                           ${PROJECT_SOURCE_DIR}/tools/characterize/characterize_options.cc
                           ${PROJECT_SOURCE_DIR}/tools/characterize/host_survey.cc
                           ${PROJECT_SOURCE_DIR}/tools/characterize/rank_exchange.cc
                   LIBS weft_perf_core weft_internal)
  add_test(NAME tools.characterize.two_ranks
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/characterize_run.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(tools.characterize.two_ranks PROPERTIES LABELS integration TIMEOUT 400 SKIP_RETURN_CODE 77
                       RUN_SERIAL TRUE)
endif()

# perf/compare.py (issue 14): one short alternated round of weft and, where it was built, Open
# MPI, on shared memory and TCP; the table must have every size and, with MPI, the ratio column.
if(TARGET all_reduce_perf AND TARGET weftrun AND TARGET memcpy_bandwidth)
  set(weft_compare_expect "\\| 32 KiB \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|")
  if(TARGET mpi_collective_bench)
    set(weft_compare_expect "MPI time / weft time.*${weft_compare_expect} [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|")
  endif()
  add_test(NAME perf.compare_with_open_mpi
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/perf/compare.py ${CMAKE_BINARY_DIR} --rounds 1 -b 8 -e 32K
                   -f 64 -n 3 -w 1)
  # With the VM placement phase's check (perf/vm_phase.py), which the other tests of it leave off.
  set_tests_properties(
    perf.compare_with_open_mpi PROPERTIES LABELS integration TIMEOUT 300 RUN_SERIAL TRUE
                                          PASS_REGULAR_EXPRESSION "# VM placement phase: [0-9]+ runs redone.*${weft_compare_expect}")
endif()

# --collective: all-gather beside MPI_Allgather on shared memory (Gloo's side is all-reduce
# only); the table must name the collective and have the MPI columns at 64 KiB.
if(TARGET all_gather_perf AND TARGET weftrun AND TARGET memcpy_bandwidth AND TARGET mpi_collective_bench)
  add_test(NAME perf.compare_with_open_mpi.all_gather
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/perf/compare.py ${CMAKE_BINARY_DIR} --collective all_gather
                   --transports shm --rounds 1 -b 1K -e 64K -f 64 -n 3 -w 1 --no-phase-check)
  set_tests_properties(
    perf.compare_with_open_mpi.all_gather
    PROPERTIES LABELS integration TIMEOUT 300 RUN_SERIAL TRUE
               PASS_REGULAR_EXPRESSION
               "# all-gather, .*# Gloo: not measured for all_gather.*MPI time / weft time.*\\| 64 KiB \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|")
endif()

# perf/sweep_vs_alone.py (issue 14): one round of a short sweep and its sizes alone; the table
# must have every size with both medians and the ratio.
if(TARGET all_reduce_perf AND TARGET weftrun)
  add_test(NAME perf.sweep_vs_alone
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/perf/sweep_vs_alone.py ${CMAKE_BINARY_DIR} --rounds 1 -b 8
                   -e 4K -f 8 -n 5 -w 1)
  set_tests_properties(
    perf.sweep_vs_alone PROPERTIES LABELS integration TIMEOUT 120 RUN_SERIAL TRUE
                                   PASS_REGULAR_EXPRESSION "\\| 8 \\| [0-9.]+ \\|.*\\| 4096 \\| [0-9.]+ \\| [0-9.]+-[0-9.]+ \\| [0-9.]+ \\| [0-9.]+-[0-9.]+ \\| [0-9.]+ \\|.*# [0-9]+ size\\(s\\) slower")
endif()
