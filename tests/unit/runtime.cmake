# runtime/: the executor's planning, without processes.
weft_test(executor_plan_test SOURCES unit/executor_plan_test.cc)
# runtime/: the plan cache's key (every field that shapes a schedule, compared in full).
weft_test(plan_cache_test SOURCES unit/plan_cache_test.cc)
# runtime/exec: which calls are cut into slices for pipelined staging between hosts, and how.
weft_test(staging_slices_test SOURCES unit/staging_slices_test.cc)
# runtime/exec: the collective record ring and its dump.
weft_test(collective_record_test SOURCES unit/collective_record_test.cc)
# runtime/status: the status reply's text, the live progress snapshot, the culprit rule.
weft_test(job_status_test SOURCES unit/job_status_test.cc)
# runtime/comm: TCP rails (which NIC a peer is joined through).
weft_test(network_rails_test SOURCES unit/network_rails_test.cc)
# runtime/device: the staging pool (which area a call gets; no device call under its lock).
weft_test(staging_pool_test SOURCES unit/staging_pool_test.cc)
