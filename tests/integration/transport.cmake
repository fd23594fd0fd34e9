# transport/: the connection contract, run against every row of the transport table.
weft_test(transport_contract_test SOURCES integration/transport_contract_test.cc LIBS weft_test_support)
