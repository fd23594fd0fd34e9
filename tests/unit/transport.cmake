# transport/: pieces of the transports testable on their own.
weft_test(fd_broker_test SOURCES unit/fd_broker_test.cc LIBS weft_test_support)
# The shared-memory ring prefault (every page, no byte changed).
weft_test(shm_segment_test SOURCES unit/shm_segment_test.cc)
# The verbs transport's protocol (credits, ordering, flow control) against an in-memory queue
# pair, and NCCL_IB_HCA's syntax: both run without an RDMA device.
weft_test(rdma_protocol_test SOURCES unit/rdma_protocol_test.cc)
weft_test(ib_device_filter_test SOURCES unit/ib_device_filter_test.cc)
# The striped TCP connection's wire format, against raw sockets.
weft_test(striped_tcp_test SOURCES unit/striped_tcp_test.cc)
# Which UCX devices a rail's NIC stands for (its netdev and its adapter's verbs ports), read
# from a sysfs tree the test builds.
if(WEFT_HAVE_UCX)
  weft_test(ucx_rail_devices_test SOURCES unit/ucx_rail_devices_test.cc)
endif()
