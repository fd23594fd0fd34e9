# The tree stays formatted with .clang-format (applied once to all of it).
add_test(NAME lint.format COMMAND bash ${PROJECT_SOURCE_DIR}/tools/scripts/check-format.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(lint.format PROPERTIES LABELS lint TIMEOUT 120)
