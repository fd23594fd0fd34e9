# Tests that take minutes: run with `ctest -L slow`, left out of the default run.
# The in-place 1024-rank n^2-message schedules that tests/unit/algorithms_collectives.cmake leaves out.
weft_test(collective_schedules_scale_test SOURCES unit/collective_schedules_test.cc TIMEOUT 600
          FILTER "*AtScale*HierarchicalAllGather_1024:*AtScale*RingReduceScatter_1024:*AtScale*HierarchicalReduceScatter_1024")
