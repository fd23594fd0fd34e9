# algorithms/: every collective's schedule builders, run with real data by the simulator.
weft_test(collective_schedules_test SOURCES unit/collective_schedules_test.cc)
# The same file built for the n^2-message algorithms at 1000 and 1024 ranks (minutes): slow.
weft_test(collective_schedules_scale_test SOURCES unit/collective_schedules_test.cc LABELS slow TIMEOUT 1800)
target_compile_definitions(collective_schedules_scale_test PRIVATE WEFT_SCHEDULES_AT_SCALE=1)
weft_test(simulator_test SOURCES unit/simulator_test.cc)
