// Names for tests parameterized by (setting text, rank count). gtest's default prints a
// const char* parameter as its address, so the ctest names changed with every build: ctest's
// recorded run times (its scheduling) and `ctest -R NAME` could not follow a test.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <tuple>

namespace weft::testing {

// "allgather:ring;broadcast:ring", 4 -> "allgather_ring_broadcast_ring_4ranks": letters and digits
// kept, every run of anything else one underscore (gtest names are letters, digits and _).
inline std::string policyAndRanksName(const ::testing::TestParamInfo<std::tuple<const char*, int>>& info) {
  std::string name;
  for (const char* c = std::get<0>(info.param); *c; ++c) {
    if (std::isalnum(static_cast<unsigned char>(*c)))
      name += *c;
    else if (!name.empty() && name.back() != '_')
      name += '_';
  }
  if (!name.empty() && name.back() != '_') name += '_';
  return name + std::to_string(std::get<1>(info.param)) + "ranks";
}

}  // namespace weft::testing
