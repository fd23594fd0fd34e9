# weft-info (algorithms/ inspection tool): include(weft_info.cmake) from tools/CMakeLists.txt, after
# weft_tool() is defined. It reaches into algorithms/ and topology/ (internal symbols).
weft_tool(weft-info SOURCES ${CMAKE_CURRENT_LIST_DIR}/weft_info.cc ${CMAKE_CURRENT_LIST_DIR}/weft_info_status.cc
          ${CMAKE_CURRENT_LIST_DIR}/weft_info_trace.cc
          LIBS weft_internal)
