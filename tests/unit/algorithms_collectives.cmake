# algorithms/: every collective's schedule builders, run with real data by the simulator.
weft_test(collective_schedules_test SOURCES unit/collective_schedules_test.cc)
weft_test(simulator_test SOURCES unit/simulator_test.cc)
