# transport/: pieces of the transports testable on their own.
weft_test(fd_broker_test SOURCES unit/fd_broker_test.cc LIBS weft_test_support)
