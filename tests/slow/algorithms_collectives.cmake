# Tests that take minutes: run with `ctest -L slow`, left out of the default run.
# The schedules file built for the n^2-message algorithms at 1000 and 1024 ranks.
weft_test(collective_schedules_scale_test SOURCES unit/collective_schedules_test.cc TIMEOUT 1800)
target_compile_definitions(collective_schedules_scale_test PRIVATE WEFT_SCHEDULES_AT_SCALE=1)
