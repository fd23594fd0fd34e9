# The memcpy ceiling printed beside every shared-memory measurement.
add_executable(memcpy_bandwidth memcpy_bandwidth.cc)
install(TARGETS memcpy_bandwidth RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
