# Two hosts as network namespaces joined by a veth pair: TCP between them for real. Needs root
# and iproute2; reports skipped (exit 77, with the reason) where namespaces cannot be made.
foreach(tool all_reduce_perf all_gather_perf sendrecv_perf)
  add_test(NAME netns.two_hosts.${tool}
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/two_hosts.sh ${CMAKE_BINARY_DIR} ${tool} -b 8 -e 4M -f 8 -c 1 -w 2 -n 5)
  set_tests_properties(netns.two_hosts.${tool} PROPERTIES LABELS netns TIMEOUT 300
                       SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endforeach()
