# CUDA kernels on a device; each test skips, with the reason, where no GPU is present.
weft_test(compression_cuda_test SOURCES gpu/compression_cuda_test.cc)
