# The soak at 100,000 random collectives on 4 ranks (the default run does 10,000).
if(TARGET soak_test)
  add_test(NAME soak_test.100000_calls COMMAND soak_test)
  set_tests_properties(soak_test.100000_calls PROPERTIES LABELS slow TIMEOUT 3600 ENVIRONMENT "WEFT_SOAK_CALLS=100000")
endif()
# Chaos: 100 trials of a rank killed with SIGKILL in the random stream (the default run does 5).
if(TARGET soak_test)
  add_test(NAME soak_test.chaos_100_trials COMMAND soak_test --gtest_filter=Chaos.*)
  set_tests_properties(soak_test.chaos_100_trials PROPERTIES LABELS slow TIMEOUT 3600 ENVIRONMENT "WEFT_CHAOS_TRIALS=100")
endif()
