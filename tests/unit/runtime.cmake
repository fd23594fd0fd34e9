# runtime/: the executor's planning, without processes.
weft_test(executor_plan_test SOURCES unit/executor_plan_test.cc LABELS unit)
