# Tests mirror the tree: every test's label is the folder that declares it.
add_test(NAME lint.test_labels COMMAND bash ${PROJECT_SOURCE_DIR}/tools/scripts/check-test-labels.sh
                                        ${PROJECT_SOURCE_DIR}/tests)
set_tests_properties(lint.test_labels PROPERTIES LABELS lint TIMEOUT 60)
