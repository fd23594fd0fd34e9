# The memcpy ceiling and the cores' cache-line round trip, printed beside every shared-memory
# measurement.
add_executable(memcpy_bandwidth memcpy_bandwidth.cc)
find_package(Threads REQUIRED)
target_link_libraries(memcpy_bandwidth PRIVATE Threads::Threads)
install(TARGETS memcpy_bandwidth RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Whether a single copy through the kernel (process_vm_readv/writev) would beat the bounce
# path for malloc'd buffers: its rate beside memcpy's on the same pages, and the all-reduce
# built on it (with weft's reduction kernels).
add_executable(cross_memory_bandwidth cross_memory_bandwidth.cc)
target_link_libraries(cross_memory_bandwidth PRIVATE weft_internal)
install(TARGETS cross_memory_bandwidth RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
