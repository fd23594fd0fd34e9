# The layering lint (cmake/layers.txt): no #include in the tree crosses the table, and the
# check itself catches crossings (its self-test runs it on a scratch tree with bad includes).
set(weft_layering_check ${PROJECT_SOURCE_DIR}/tools/scripts/check-layering.sh)
add_test(NAME lint.layering COMMAND bash ${weft_layering_check} ${PROJECT_SOURCE_DIR})
add_test(NAME lint.layering_self_test COMMAND bash ${weft_layering_check} --self-test)
set_tests_properties(lint.layering lint.layering_self_test PROPERTIES LABELS lint TIMEOUT 60)
