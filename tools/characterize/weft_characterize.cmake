# weft-characterize (included by tools/CMakeLists.txt). It links the library's objects
# (weft_internal, as weft-info does: it reads which algorithm a call ran from the communicator's
# record) and compiles the perf tools' descriptions with WEFT_PERF_TOOL_REGISTER, so it
# measures every collective exactly as the tools do.
if(NOT WEFT_BUILD_PERF)
  return()
endif()
set(weft_characterize_tools all_reduce all_gather reduce_scatter broadcast reduce alltoall gather scatter)
set(weft_characterize_sources
  ${CMAKE_CURRENT_LIST_DIR}/characterize_options.cc
  ${CMAKE_CURRENT_LIST_DIR}/characterize_document.cc
  ${CMAKE_CURRENT_LIST_DIR}/collective_sweep.cc
  ${CMAKE_CURRENT_LIST_DIR}/host_survey.cc
  ${CMAKE_CURRENT_LIST_DIR}/p2p_matrix.cc
  ${CMAKE_CURRENT_LIST_DIR}/rank_exchange.cc
  ${CMAKE_CURRENT_LIST_DIR}/report_script.cc
  ${CMAKE_CURRENT_LIST_DIR}/run_control.cc
  ${PROJECT_SOURCE_DIR}/perf/perf_harness.cc
  ${CMAKE_CURRENT_LIST_DIR}/../weft_characterize.cc)
foreach(tool ${weft_characterize_tools})
  list(APPEND weft_characterize_sources ${PROJECT_SOURCE_DIR}/perf/${tool}_perf.cc)
endforeach()
weft_tool(weft-characterize SOURCES ${weft_characterize_sources} LIBS weft_perf_core weft_internal)
target_compile_definitions(weft-characterize PRIVATE WEFT_PERF_TOOL_REGISTER
  WEFT_SOURCE_SCRIPT="${PROJECT_SOURCE_DIR}/tools/scripts/characterize_report.py"
  WEFT_INSTALLED_SCRIPT="${CMAKE_INSTALL_FULL_DATADIR}/weft/tools/scripts/characterize_report.py")
install(FILES ${PROJECT_SOURCE_DIR}/tools/scripts/characterize_report.py DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/tools/scripts)
install(FILES ${PROJECT_SOURCE_DIR}/perf/fit_link_model.py DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/perf)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/characterize.schema.json DESTINATION ${CMAKE_INSTALL_DATADIR}/weft)
