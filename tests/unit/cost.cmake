# algorithms/: all-reduce builders (tree, rhd, hierarchical) under the simulator, and
# the cost model and algorithm selection on the topology fixtures.
weft_test(allreduce_algorithms_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/allreduce_algorithms_test.cc)
weft_test(algorithm_selection_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/algorithm_selection_test.cc)
target_compile_definitions(algorithm_selection_test PRIVATE
                           WEFT_TOPO_FIXTURE_DIR="${CMAKE_CURRENT_LIST_DIR}/../fixtures/topology")
weft_test(link_model_simulation_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/link_model_simulation_test.cc)
target_compile_definitions(link_model_simulation_test PRIVATE
                           WEFT_TOPO_FIXTURE_DIR="${CMAKE_CURRENT_LIST_DIR}/../fixtures/topology")
