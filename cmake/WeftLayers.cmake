# The layers' targets, from the table in cmake/layers.txt.
#
# weft_layer(NAME SOURCES...): the object library weft_NAME of layer NAME, linking the layers
# the table lets NAME use, and no other.

set(WEFT_LAYER_TABLE ${CMAKE_CURRENT_LIST_DIR}/layers.txt)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${WEFT_LAYER_TABLE})
file(STRINGS ${WEFT_LAYER_TABLE} weft_layer_rows REGEX "^[a-z_]+:")
set(WEFT_LAYER_NAMES)
foreach(row IN LISTS weft_layer_rows)
  string(REGEX MATCH "^([a-z_]+):(.*)$" unused "${row}")
  set(layer ${CMAKE_MATCH_1})
  separate_arguments(uses UNIX_COMMAND "${CMAKE_MATCH_2}")
  if(uses STREQUAL "*")
    continue()  # perf/, tools/, tests/: not layers, may use anything
  endif()
  foreach(used IN LISTS uses)
    if(NOT used IN_LIST WEFT_LAYER_NAMES)
      message(FATAL_ERROR "${WEFT_LAYER_TABLE}: ${layer} uses ${used}, which is not listed above it")
    endif()
  endforeach()
  list(APPEND WEFT_LAYER_NAMES ${layer})
  set(WEFT_LAYER_USES_${layer} ${uses})
endforeach()

function(weft_layer name)
  if(NOT name MATCHES "^weft_(.+)$" OR NOT CMAKE_MATCH_1 IN_LIST WEFT_LAYER_NAMES)
    message(FATAL_ERROR "weft_layer(${name}): not weft_<layer> for a layer of ${WEFT_LAYER_TABLE}")
  endif()
  set(layer ${CMAKE_MATCH_1})
  add_library(${name} OBJECT ${ARGN})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  target_compile_options(${name} PRIVATE -fvisibility=hidden)
  foreach(used IN LISTS WEFT_LAYER_USES_${layer})
    target_link_libraries(${name} PRIVATE weft_${used})
  endforeach()
  set_property(GLOBAL APPEND PROPERTY WEFT_LAYERS ${name})
  set_property(GLOBAL APPEND PROPERTY WEFT_LAYER_OBJECTS_${layer} $<TARGET_OBJECTS:${name}>)
endfunction()

# weft_layer_link_checks(LIBS...): for each layer, a shared library of its objects and those
# of the layers it may use, linked with --no-undefined: a layer that calls into a layer above
# it (even without including its header) fails the build here. LIBS: the outside libraries.
function(weft_layer_link_checks)
  foreach(layer IN LISTS WEFT_LAYER_NAMES)
    if(NOT TARGET weft_${layer})
      continue()  # a table row without a target (include/: headers only)
    endif()
    set(objects)
    foreach(part IN LISTS layer WEFT_LAYER_USES_${layer})
      get_property(part_objects GLOBAL PROPERTY WEFT_LAYER_OBJECTS_${part})
      list(APPEND objects ${part_objects})
    endforeach()
    add_library(weft_layer_links_${layer} SHARED ${objects})
    target_link_libraries(weft_layer_links_${layer} PRIVATE ${ARGN})
    target_link_options(weft_layer_links_${layer} PRIVATE -Wl,--no-undefined)
  endforeach()
endfunction()
