# common/: conversions, data-type facts and the reduction kernels.
weft_test(numeric_test SOURCES unit/numeric_test.cc)
weft_test(reduce_test SOURCES unit/reduce_test.cc)
weft_test(reduce_to_two_test SOURCES unit/reduce_to_two_test.cc)
# The element arithmetic the CUDA reduction kernels share with the CPU (common/reduce_element.h).
weft_test(reduce_element_test SOURCES unit/reduce_element_test.cc)
# common/settings: the declared environment variables, and the README's table of them.
weft_test(settings_test SOURCES unit/settings_test.cc)
weft_test(settings_digest_test SOURCES unit/settings_digest_test.cc)
weft_test(settings_readme_test SOURCES unit/settings_readme_test.cc)
target_compile_definitions(settings_readme_test PRIVATE WEFT_README_PATH="${PROJECT_SOURCE_DIR}/README.md")
weft_test(cpu_features_test SOURCES unit/cpu_features_test.cc)
# common/deadline.h and common/socket.h: saturating deadlines; connect, keepalive and closed peers.
weft_test(deadline_test SOURCES unit/deadline_test.cc)
weft_test(socket_test SOURCES unit/socket_test.cc)
# The reference every collective test compares against: wrong results must fail it.
weft_test(reference_test SOURCES unit/reference_test.cc support/reference.cc)
