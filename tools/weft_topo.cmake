# weft-topo (topology/ inspection tool): include(weft_topo.cmake) from tools/CMakeLists.txt, after
# weft_tool() is defined. It reaches into topology/ (internal symbols), so it links the static
# library of all layers rather than libweft.
weft_tool(weft-topo SOURCES ${CMAKE_CURRENT_LIST_DIR}/weft_topo.cc LIBS weft_internal)
