# compression/: codecs and error feedback.
weft_test(compression_codec_test SOURCES unit/compression_codec_test.cc)
weft_test(compression_topk_test SOURCES unit/compression_topk_test.cc)
weft_test(compression_feedback_test SOURCES unit/compression_feedback_test.cc)
