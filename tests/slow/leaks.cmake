# Init/destroy and split/destroy, 1000 loops each (the default run does 50).
if(TARGET leak_test)
  add_test(NAME leak_test.1000_loops COMMAND leak_test)
  set_tests_properties(leak_test.1000_loops PROPERTIES LABELS slow TIMEOUT 1800 ENVIRONMENT "WEFT_LEAK_LOOPS=1000")
endif()
