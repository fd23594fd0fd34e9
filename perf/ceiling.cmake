# The memcpy ceiling and the cores' cache-line round trip, printed beside every shared-memory
# measurement.
add_executable(memcpy_bandwidth memcpy_bandwidth.cc)
find_package(Threads REQUIRED)
target_link_libraries(memcpy_bandwidth PRIVATE Threads::Threads)
install(TARGETS memcpy_bandwidth RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
