# compression/: codecs and error feedback.
weft_test(compression_codec_test SOURCES unit/compression_codec_test.cc LABELS unit)
weft_test(compression_topk_test SOURCES unit/compression_topk_test.cc LABELS unit)
weft_test(compression_feedback_test SOURCES unit/compression_feedback_test.cc LABELS unit)
# CUDA vs CPU byte equality; skips (with the reason) where no GPU is present.
weft_test(compression_cuda_test SOURCES unit/compression_cuda_test.cc LABELS gpu)
