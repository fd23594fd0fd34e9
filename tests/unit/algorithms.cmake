# algorithms/: schedule builders checked symbolically.
weft_test(ring_schedule_test SOURCES unit/ring_schedule_test.cc)
