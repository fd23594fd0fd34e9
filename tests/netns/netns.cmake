# Two hosts as network namespaces joined by a veth pair: TCP between them for real. Needs root
# and iproute2; reports skipped (exit 77, with the reason) where namespaces cannot be made.
foreach(tool all_reduce_perf all_gather_perf sendrecv_perf)
  add_test(NAME netns.two_hosts.${tool}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/two_hosts.sh ${CMAKE_BINARY_DIR} ${tool} -b 8 -e 4M -f 8 -c 1 -w 2 -n 5)
  set_tests_properties(netns.two_hosts.${tool} PROPERTIES LABELS netns TIMEOUT 300
                       SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endforeach()

# H hosts x 2 ranks on a bridge (tests/netns/hosts_lib.sh): every collective over each network
# transport between hosts (shared memory inside each), checked against the reference; and a
# rank killed on one host, after which every other rank fails within WEFT_TIMEOUT.
set(weft_netns_nets tcp)
if(WEFT_HAVE_UCX)
  list(APPEND weft_netns_nets ucx)
endif()
set(weft_netns_tools all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf
                     sendrecv_perf gather_perf scatter_perf)
foreach(hosts 2 3)
  foreach(net IN LISTS weft_netns_nets)
    foreach(tool IN LISTS weft_netns_tools)
      add_test(NAME netns.hosts${hosts}x2.${net}.${tool}
               COMMAND ${CMAKE_CURRENT_LIST_DIR}/multi_host.sh ${CMAKE_BINARY_DIR} ${hosts} 2 --net ${net} ${tool}
                       -b 8 -e 1M -f 8 -c 1 -w 1 -n 3)
      set_tests_properties(netns.hosts${hosts}x2.${net}.${tool} PROPERTIES LABELS netns TIMEOUT 300
                           SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
    endforeach()
  endforeach()
endforeach()
# One rank per host on 3 hosts: both ring neighbours of every rank across the network. Set-up in
# ring order (prev, then next) deadlocked here: rank 0 waited for 2, 2 for 1, 1 for 0.
foreach(net IN LISTS weft_netns_nets)
  add_test(NAME netns.hosts3x1.${net}.all_reduce_perf
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/multi_host.sh ${CMAKE_BINARY_DIR} 3 1 --net ${net} all_reduce_perf
                   -b 8 -e 1M -f 8 -c 1 -w 1 -n 3)
  set_tests_properties(netns.hosts3x1.${net}.all_reduce_perf PROPERTIES LABELS netns TIMEOUT 120
                       SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endforeach()
foreach(net IN LISTS weft_netns_nets)
  add_test(NAME netns.hosts3x2.${net}.rank_killed
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/rank_killed.sh ${CMAKE_BINARY_DIR} 3 2 ${net})
  set_tests_properties(netns.hosts3x2.${net}.rank_killed PROPERTIES LABELS netns TIMEOUT 120 SKIP_RETURN_CODE 77
                       RUN_SERIAL TRUE)
endforeach()

# WEFT_ENCRYPTION=tls: a known pattern all-gathered between two hosts never shows in the
# traffic tcpdump captures on the link, and does without encryption.
add_executable(canary_all_gather ${CMAKE_CURRENT_LIST_DIR}/canary_all_gather.cc)
target_link_libraries(canary_all_gather PRIVATE weft)
target_include_directories(canary_all_gather PRIVATE ${PROJECT_SOURCE_DIR}/include)
add_test(NAME netns.two_hosts.tls_hides_the_payload COMMAND ${CMAKE_CURRENT_LIST_DIR}/encryption.sh ${CMAKE_BINARY_DIR})
set_tests_properties(netns.two_hosts.tls_hides_the_payload PROPERTIES LABELS netns TIMEOUT 180 SKIP_RETURN_CODE 77
                     RUN_SERIAL TRUE)

# weft-info status across hosts: a stalled rank on host 1 named from host 0, within 2 s.
add_executable(stalled_all_reduce ${CMAKE_CURRENT_LIST_DIR}/stalled_all_reduce.cc)
target_link_libraries(stalled_all_reduce PRIVATE weft)
target_include_directories(stalled_all_reduce PRIVATE ${PROJECT_SOURCE_DIR}/include)
add_test(NAME netns.hosts2x2.status_across_hosts
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/status_across_hosts.sh ${CMAKE_BINARY_DIR})
set_tests_properties(netns.hosts2x2.status_across_hosts PROPERTIES LABELS netns TIMEOUT 120 SKIP_RETURN_CODE 77
                     RUN_SERIAL TRUE)

# WEFT_TRACE across hosts: the ranks' clock offsets, weft-info trace merge, one time line.
add_test(NAME netns.hosts2x2.trace_across_hosts
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/trace_across_hosts.sh ${CMAKE_BINARY_DIR})
set_tests_properties(netns.hosts2x2.trace_across_hosts PROPERTIES LABELS netns TIMEOUT 120 SKIP_RETURN_CODE 77
                     RUN_SERIAL TRUE)

# weft-characterize on 3 hosts, one shaped to a quarter of the others: it is named (issue 16).
add_test(NAME netns.hosts3.characterize_slow_host
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/characterize_slow_host.sh ${CMAKE_BINARY_DIR})
set_tests_properties(netns.hosts3.characterize_slow_host PROPERTIES LABELS netns TIMEOUT 240 SKIP_RETURN_CODE 77
                     RUN_SERIAL TRUE)
# Two NICs per host on separate rail networks: the ring all-reduce over TCP spreads over both
# (NCCL_SOCKET_IFNAME naming both) against eth0 alone on the same shaped links.
# UCX the same way: a worker per rail on that rail's NIC (UCX_NET_DEVICES=eth0 for one NIC).
foreach(net IN LISTS weft_netns_nets)
  add_test(NAME netns.hosts2x2.${net}.rails COMMAND ${CMAKE_CURRENT_LIST_DIR}/rails.sh ${CMAKE_BINARY_DIR} 200mbit ${net})
  set_tests_properties(netns.hosts2x2.${net}.rails PROPERTIES LABELS netns TIMEOUT 120 SKIP_RETURN_CODE 77
                                                              RUN_SERIAL TRUE)
endforeach()

# perf/compare.py --hosts (issue 14): weft beside Open MPI (and Gloo) across 2 namespace hosts x 2
# ranks, one short round; every table must have its rows, and MPI's columns where it was built.
if(TARGET all_reduce_perf AND TARGET memcpy_bandwidth)
  set(weft_compare_hosts_nets tcp)
  if(WEFT_HAVE_UCX)
    list(APPEND weft_compare_hosts_nets ucx)
  endif()
  set(weft_compare_hosts_row "\\| 32 KiB \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|")
  if(TARGET mpi_collective_bench)
    set(weft_compare_hosts_row "MPI time / weft time.*${weft_compare_hosts_row} [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|")
  endif()
  string(REPLACE ";" "," weft_compare_hosts_list "${weft_compare_hosts_nets}")
  set(weft_compare_hosts_expect "# all-reduce, 4 ranks on 2 namespace hosts")
  foreach(net IN LISTS weft_compare_hosts_nets)
    string(APPEND weft_compare_hosts_expect ".*## ${net} between hosts.*${weft_compare_hosts_row}")
  endforeach()
  add_test(NAME netns.hosts2x2.compare_with_open_mpi
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/perf/compare.py ${CMAKE_BINARY_DIR} --hosts 2 --ranks 4
                   --transports ${weft_compare_hosts_list} --rounds 1 -b 8 -e 32K -f 64 -n 3 -w 1 --no-phase-check)
  set_tests_properties(netns.hosts2x2.compare_with_open_mpi PROPERTIES LABELS netns TIMEOUT 300 SKIP_RETURN_CODE 77
                       RUN_SERIAL TRUE PASS_REGULAR_EXPRESSION "${weft_compare_hosts_expect}")

  # perf/ab_between_hosts.py: one round of two variants; the table must have both, with the ratio.
  add_test(NAME netns.hosts2.ab_between_hosts
           COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/perf/ab_between_hosts.py ${CMAKE_BINARY_DIR} --size 1M
                   --rounds 1 -n 3 -w 1 tcp=WEFT_NET=tcp tcp4=WEFT_NET=tcp,WEFT_TCP_SLOTS=4)
  set_tests_properties(
    netns.hosts2.ab_between_hosts
    PROPERTIES LABELS netns TIMEOUT 120 SKIP_RETURN_CODE 77 RUN_SERIAL TRUE
               PASS_REGULAR_EXPRESSION
               "# VM placement phase: [0-9]+ runs redone.*\\| tcp \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| 1.00 \\|.*\\| tcp4 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|")
endif()
