# common/: conversions, data-type facts and the reduction kernels.
weft_test(numeric_test SOURCES unit/numeric_test.cc LABELS unit)
weft_test(reduce_test SOURCES unit/reduce_test.cc LABELS unit)
