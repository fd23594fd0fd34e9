# transport/: the connection contract, run against every row of the transport table.
weft_test(transport_contract_test SERIAL SOURCES integration/transport_contract_test.cc LIBS weft_test_support)
# WEFT_TCP_CONGESTION on real loopback connections (transport/tcp/tcp_congestion.h).
weft_test(tcp_congestion_test SERIAL SOURCES integration/tcp_congestion_test.cc LIBS weft_test_support)
if(WEFT_HAVE_UCX)
  # A UCX peer lost between the address swap and the wire-up (transport/ucx).
  weft_test(ucx_peer_loss_test SERIAL SOURCES integration/ucx_peer_loss_test.cc)
  target_include_directories(ucx_peer_loss_test PRIVATE ${UCX_INCLUDE_DIRS})
  # The settings weft makes for UCX reach its transports (transport/ucx/ucx_worker.cc).
  weft_test(ucx_settings_test SOURCES integration/ucx_settings_test.cc)
  target_include_directories(ucx_settings_test PRIVATE ${UCX_INCLUDE_DIRS})
endif()
