# Multi-process and multi-thread tests of the runtime through the NCCL API. SERIAL: tests that
# bound a time (an error within a time-out, a call that returns at once), a CPU time (a waiter
# that sleeps) or a process's descriptors and memory run alone (tests/CMakeLists.txt).
weft_test(allreduce_test SOURCES integration/allreduce_test.cc LIBS weft_test_support TIMEOUT 600)
weft_test(init_threads_test SOURCES integration/init_threads_test.cc LIBS weft_test_support)
weft_test(errors_test SERIAL SOURCES integration/errors_test.cc LIBS weft_test_support)
weft_test(fake_hosts_test SOURCES integration/fake_hosts_test.cc LIBS weft_test_support)
weft_test(memalloc_allreduce_test SOURCES integration/memalloc_allreduce_test.cc LIBS weft_test_support)
# Small all-reduces in one exchange through shared-memory mailboxes (runtime/exec/one_shot.h).
weft_test(one_shot_test SERIAL SOURCES integration/one_shot_test.cc LIBS weft_test_support)
# Same-host ranks joined by sockets are priced as sockets (the cost model's Loopback link).
weft_test(socket_pricing_test SOURCES integration/socket_pricing_test.cc LIBS weft_test_support)
weft_test(collectives_test SOURCES integration/collectives_test.cc LIBS weft_test_support TIMEOUT 900)
weft_test(comm_management_test SERIAL SOURCES integration/comm_management_test.cc LIBS weft_test_support)
weft_test(logging_test SOURCES integration/logging_test.cc LIBS weft_test_support)
weft_test(premulsum_lifetime_test SOURCES integration/premulsum_lifetime_test.cc LIBS weft_test_support)
# Unused unique ids: no thread or port each, all released at WEFT_TIMEOUT.
weft_test(unique_id_root_test SERIAL SOURCES integration/unique_id_root_test.cc LIBS weft_test_support)
# No exception escapes through the C API (std::bad_alloc under an address-space limit).
weft_test(api_boundary_test SOURCES integration/api_boundary_test.cc LIBS weft_test_support)
# A closed TCP peer must not make a waiting rank spin (CPU time against wall time).
weft_test(closed_peer_test SERIAL SOURCES integration/closed_peer_test.cc LIBS weft_test_support)
# ncclCommAbort during calls in flight (WEFT_ABORT_TRIALS per case; the slow label runs 100).
weft_test(abort_test SERIAL SOURCES integration/abort_test.cc LIBS weft_test_support)
# Settings that shape schedules set differently on one rank: init fails on every rank, naming them.
weft_test(settings_agreement_test SERIAL SOURCES integration/settings_agreement_test.cc LIBS weft_test_support)
target_compile_definitions(settings_agreement_test PRIVATE
                           WEFT_TOPO_FIXTURE_DIR="${CMAKE_CURRENT_LIST_DIR}/../fixtures/topology")
# Init/destroy and split/destroy loops leave no fds, threads, mappings or memory behind
# (WEFT_LEAK_LOOPS loops per case; the slow label runs 1000).
weft_test(leak_test SERIAL SOURCES integration/leak_test.cc LIBS weft_test_support)
# A random stream of collectives on 4 ranks, every result checked, memory flat
# (WEFT_SOAK_CALLS calls, 10,000 by default; the slow label runs 100,000).
weft_test(soak_test SERIAL SOURCES integration/soak_test.cc LIBS weft_test_support TIMEOUT 600)
# Collectives on device memory in stream order, through the CPU implementation of the device
# seam (runtime/device/cpu_device.h): every collective, ordering, groups, errors, abort.
weft_test(stream_order_test SERIAL SOURCES integration/stream_order_test.cc LIBS weft_test_support)
# The direct all-reduce on device buffers (IPC through the seam) and its fallbacks, on the CPU device.
weft_test(device_direct_test SOURCES integration/device_direct_test.cc LIBS weft_test_support)
# Sends and receives between device buffers, direct where both sides can (direct_point_to_point.h).
weft_test(device_point_to_point_test SOURCES integration/device_point_to_point_test.cc LIBS weft_test_support)
# Device calls between hosts cut into slices, staged slice by slice (runtime/exec/staging_slices.h).
weft_test(pipelined_staging_test SOURCES integration/pipelined_staging_test.cc LIBS weft_test_support)
# Attacks on admission: replayed hellos, impostors, idle connections by the thousand (docs/security.md).
weft_test(security_test SERIAL SOURCES integration/security_test.cc LIBS weft_test_support)
# WEFT_ENCRYPTION=tls: results over TLS with certificates, refusals and init errors.
weft_test(encryption_test SERIAL SOURCES integration/encryption_test.cc LIBS weft_test_support)
# The record, dumps, trace and metrics; `weft-info status` against live and stuck jobs.
weft_test(observability_test SERIAL SOURCES integration/observability_test.cc LIBS weft_test_support)
target_compile_definitions(observability_test PRIVATE WEFT_INFO_PATH="$<TARGET_FILE:weft-info>")
add_dependencies(observability_test weft-info)
