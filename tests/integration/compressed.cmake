# Compressed all-reduce (weftAllReduceCompressed, WEFT_COMPRESSION) across rank processes.
weft_test(compressed_allreduce_test SOURCES integration/compressed_allreduce_test.cc LIBS weft_test_support TIMEOUT 600)
