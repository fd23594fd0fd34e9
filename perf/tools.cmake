# nccl-tests-compatible perf tools (included by perf/CMakeLists.txt).
#
# weft_perf_core: the harness' pure parts (flags, data, expected values, output format); it
# uses only nccl.h's types, so its unit tests build without the library.
# weft_perf_harness: the runner (communicator, timing, checks), linked to libweft.
add_library(weft_perf_core STATIC
  ${CMAKE_CURRENT_LIST_DIR}/perf_options.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_data.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_report.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_coll.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_iter_stats.cc
  ${CMAKE_CURRENT_LIST_DIR}/perf_json.cc
)
target_include_directories(weft_perf_core PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)

add_library(weft_perf_harness STATIC ${CMAKE_CURRENT_LIST_DIR}/perf_harness.cc)
target_link_libraries(weft_perf_harness PUBLIC weft_perf_core weft)

# weft_perf_tool(NAME SOURCE): one nccl-tests tool (NAME_perf) built from its small file.
function(weft_perf_tool name source)
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE weft_perf_harness)
  install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  set_property(GLOBAL APPEND PROPERTY WEFT_PERF_TOOLS ${name})
endfunction()

weft_perf_tool(all_reduce_perf ${CMAKE_CURRENT_LIST_DIR}/all_reduce_perf.cc)
weft_perf_tool(all_gather_perf ${CMAKE_CURRENT_LIST_DIR}/all_gather_perf.cc)
weft_perf_tool(reduce_scatter_perf ${CMAKE_CURRENT_LIST_DIR}/reduce_scatter_perf.cc)
weft_perf_tool(broadcast_perf ${CMAKE_CURRENT_LIST_DIR}/broadcast_perf.cc)
weft_perf_tool(reduce_perf ${CMAKE_CURRENT_LIST_DIR}/reduce_perf.cc)
weft_perf_tool(alltoall_perf ${CMAKE_CURRENT_LIST_DIR}/alltoall_perf.cc)
weft_perf_tool(sendrecv_perf ${CMAKE_CURRENT_LIST_DIR}/sendrecv_perf.cc)
weft_perf_tool(gather_perf ${CMAKE_CURRENT_LIST_DIR}/gather_perf.cc)
weft_perf_tool(scatter_perf ${CMAKE_CURRENT_LIST_DIR}/scatter_perf.cc)
weft_perf_tool(hypercube_perf ${CMAKE_CURRENT_LIST_DIR}/hypercube_perf.cc)
