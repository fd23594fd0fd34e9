# Topology tests (topology/). Sources and fixtures are named from this file's directory so the
# fragment works wherever it is included from.
set(weft_topology_fixtures ${CMAKE_CURRENT_LIST_DIR}/../fixtures/topology)
foreach(t discovery fixture xml layout)
  weft_test(topology_${t}_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/topology_${t}_test.cc)
  target_compile_definitions(topology_${t}_test PRIVATE
                             WEFT_TOPO_FIXTURE_DIR="${weft_topology_fixtures}")
endforeach()
