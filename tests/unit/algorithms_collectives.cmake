# algorithms/: every collective's schedule builders, run with real data by the simulator.
# Three in-place 1024-rank n^2-message schedules take 20 s each here: tests/slow/ runs those.
weft_test(collective_schedules_test SOURCES unit/collective_schedules_test.cc
          FILTER "*-*AtScale*HierarchicalAllGather_1024:*AtScale*RingReduceScatter_1024:*AtScale*HierarchicalReduceScatter_1024")
weft_test(simulator_test SOURCES unit/simulator_test.cc)
weft_test(strided_blocks_test SOURCES unit/strided_blocks_test.cc)
