# What CI's sanitizer stage builds and runs (sourced by run-sanitizer-tests.sh, and by
# check-sanitizer-targets.sh, which lint.sanitizer_targets runs against the full build).
# shellcheck shell=bash

# The test areas (tests/*/AREA.cmake) built with the sanitizers.
sanitizer_areas="runtime;transport;common;abi"

# The tests ThreadSanitizer runs: those that start threads or drive one communicator from
# several. Everything else in these areas is single-threaded per process, where TSan has nothing
# to find.
threaded='InitAll|InitRank|Split|Shrink|Revoke|Abort|FdBroker|PreMulSum|Deadline|ConnectSocket|ConnectionContract'
threaded+='|PeerProcessContract|UniqueIdRoot|ClosedPeer|ApiBoundary|abi_process_group|abi_allreduce|Timeout'
threaded+='|Intruder|Mismatch|SingleRank|DerivedCommunicators|Registration|Watchdog|StreamOrder|StagingPool|DeviceDirect'
threaded+='|Replay|Impostor|PeerHandshakeAuth|ForgedRankTable|PipelinedStaging'
# The status server's thread answers while collectives run (weft-info status, dumps, time-outs).
threaded+='|Observability|CollectiveProgress'

# What the ThreadSanitizer build makes: the executables those tests are in and what they run
# (weftrun, libnccl for the ABI programs, weft-info for the status tests), half the areas' test
# files. A test built nowhere would not run, in silence: lint.sanitizer_targets checks this list
# against the tests the full build has.
threaded_targets='transport_contract_test errors_test stream_order_test device_direct_test comm_management_test'
threaded_targets+=' device_point_to_point_test'
threaded_targets+=' observability_test pipelined_staging_test'
threaded_targets+=' security_test fd_broker_test abort_test init_threads_test premulsum_lifetime_test deadline_test'
threaded_targets+=' collectives_test api_boundary_test leak_test socket_test unique_id_root_test closed_peer_test'
threaded_targets+=' settings_agreement_test job_status_test staging_pool_test abi_process_group abi_allreduce weftrun nccl'
threaded_targets+=' weft-info'
