# ncclCommAbort during calls in flight, 100 trials of each case (the default run does 2).
if(TARGET abort_test)
  add_test(NAME abort_test.100_trials COMMAND abort_test)
  set_tests_properties(abort_test.100_trials PROPERTIES LABELS slow TIMEOUT 1800
                                                        ENVIRONMENT "WEFT_ABORT_TRIALS=100")
endif()
