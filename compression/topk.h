// Top-k selection by magnitude, returning (index, value) pairs in ascending index order.
//
// Order: elements compare by |x| as bit patterns (key = bits & 0x7fffffff), so NaN > Inf >
// every finite value: non-finite gradients are always sent. Ties go to the lower index, so
// the selected set is a pure function of the data.
//
// exact(): the k largest. Radix selection on the key (no sort): a 2048-bin histogram of the
// top 11 key bits finds the bin holding the k-th largest; the keys in that bin are gathered
// (or, if too many, refined by two more 10-bit histogram passes) and selected with
// nth_element; a last pass emits the winners. Three passes over the data in the usual case.
//
// approximate(): the threshold t is the (oversample * k / n) quantile of a sample of whole
// 64-byte lines at hashed positions (Deep Gradient Compression's estimate; the rule is in
// topk_sample.h, shared with the CUDA kernels); one pass gathers
// the elements with key >= t into a buffer of 2k, which is cut to its exact top k whenever it
// fills (raising t). Result: the exact top min(k, #{key >= t}) of the chunk. With sample size
// m and p = k / n, #{key >= t} ~ oversample * k * (1 +- 1/sqrt(oversample * p * m)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace weft::compression {

class TopKSelector {
 public:
  // Scratch for chunks of up to maxCount elements and k up to maxK; no allocation afterwards.
  TopKSelector(size_t maxCount, size_t maxK, uint32_t sampleSize);

  // Both return the number of pairs written to indices/values (capacity k).
  size_t exact(const float* x, size_t n, size_t k, uint32_t* indices, float* values);
  size_t approximate(const float* x, size_t n, size_t k, double oversample, uint64_t seed, uint32_t* indices,
                     float* values);

  // The key threshold the last approximate() call estimated from its sample (for tests).
  uint32_t sampleThresholdKey() const { return sampleThreshold_; }

 private:
  struct Cut {
    uint32_t key;      // the k-th largest key
    size_t takeEqual;  // how many elements equal to key are kept (lowest indices first)
  };
  Cut selectInCandidates(size_t count, size_t needed);
  size_t compact(size_t count, size_t k);  // keeps the exact top k of the candidate buffer

  size_t capacity_;
  std::vector<uint32_t> keys_;     // candidate keys / nth_element scratch
  std::vector<uint32_t> candIdx_;  // approximate(): candidates in index order
  std::vector<float> candVal_;
  std::vector<uint32_t> sample_;
  uint32_t sampleLines_;
  uint32_t lastThreshold_ = 0;
  uint32_t sampleThreshold_ = 0;
};

}  // namespace weft::compression
