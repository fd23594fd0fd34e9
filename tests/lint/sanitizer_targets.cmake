# CI's ThreadSanitizer stage builds only the executables that hold its tests: the list covers every
# executable with a test it selects, checked against this (full) build's tests.
add_test(NAME lint.sanitizer_targets COMMAND bash ${PROJECT_SOURCE_DIR}/tools/scripts/check-sanitizer-targets.sh
                                             ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(lint.sanitizer_targets PROPERTIES LABELS lint TIMEOUT 60)
