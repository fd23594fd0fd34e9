# weft_read_version(HEADER PREFIX OUT): reads "#define PREFIX_MAJOR n" (and _MINOR, _PATCH)
# from HEADER into OUT as MAJOR.MINOR.PATCH. The headers keep the versions as literals, since
# user programs compile against them; CMake takes them from there.
function(weft_read_version header prefix out)
  set(parts)
  foreach(part MAJOR MINOR PATCH)
    file(STRINGS ${header} line REGEX "^#define ${prefix}_${part} +[0-9]+ *$")
    if(NOT line MATCHES "^#define ${prefix}_${part} +([0-9]+)")
      message(FATAL_ERROR "${header}: no '#define ${prefix}_${part} <number>'")
    endif()
    list(APPEND parts ${CMAKE_MATCH_1})
  endforeach()
  list(JOIN parts "." version)
  set(${out} ${version} PARENT_SCOPE)
  # Re-run CMake when the header's version changes.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${header})
endfunction()
