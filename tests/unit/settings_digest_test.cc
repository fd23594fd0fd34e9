// The settings digest (common/settings_digest.h): which values it records and how a difference
// between ranks is reported. The multi-process behaviour is in
// tests/integration/settings_agreement_test.cc.
#include "common/settings_digest.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/status.h"

using namespace weft;

namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

// The index of `name` among the digest's values (the ranksMustAgree rows in table order).
size_t indexOf(const char* name) {
  size_t index = 0;
  for (const SettingSpec& spec : allSettings()) {
    if (spec.name == std::string(name)) return index;
    index += spec.ranksMustAgree ? 1 : 0;
  }
  ADD_FAILURE() << name << " is not an agreed setting";
  return 0;
}

std::string verdict(const std::vector<SettingsDigest>& digests) {
  std::vector<const SettingsDigest*> byRank;
  for (const SettingsDigest& digest : digests) byRank.push_back(&digest);
  return checkSettingsAgree(byRank) == ncclSuccess ? "agree" : lastErrorMessage();
}

TEST(SettingsDigest, RecordsEveryAgreedSettingInCanonicalForm) {
  size_t agreed = 0;
  for (const SettingSpec& spec : allSettings()) agreed += spec.ranksMustAgree ? 1 : 0;
  SettingsDigest plain = digestAgreedSettings();
  EXPECT_EQ(plain.count, agreed);
  EXPECT_STREQ(plain.values[indexOf("WEFT_SHM_SLOT_BYTES")].shown, "524288");  // the default
  EXPECT_STREQ(plain.values[indexOf("NCCL_ALGO")].shown, "unset");
  ScopedEnv hex("WEFT_SLICE_BYTES", "0x2000");
  SettingsDigest set = digestAgreedSettings();
  EXPECT_STREQ(set.values[indexOf("WEFT_SLICE_BYTES")].shown, "8192");
  ScopedEnv decimal("WEFT_SLICE_BYTES", "8192");
  EXPECT_EQ(digestAgreedSettings().values[indexOf("WEFT_SLICE_BYTES")].hash,
            set.values[indexOf("WEFT_SLICE_BYTES")].hash);
}

TEST(SettingsDigest, EqualDigestsAgree) {
  EXPECT_EQ(verdict(std::vector<SettingsDigest>(5, digestAgreedSettings())), "agree");
}

TEST(SettingsDigest, DifferenceNamesVariableValuesAndRanks) {
  std::vector<SettingsDigest> digests(8, digestAgreedSettings());
  {
    ScopedEnv odd("WEFT_SHM_SLOT_BYTES", "4096");
    digests[1] = digests[5] = digests[6] = digests[7] = digestAgreedSettings();
  }
  EXPECT_EQ(verdict(digests),
            "WEFT_SHM_SLOT_BYTES differs between ranks: 524288 on ranks 0,2-4; 4096 on ranks 1,5-7; every rank must "
            "set it alike, since it shapes schedules or messages");
}

TEST(SettingsDigest, FirstDifferenceInFullOthersByName) {
  std::vector<SettingsDigest> digests(3, digestAgreedSettings());
  {
    ScopedEnv algo("NCCL_ALGO", "Ring");
    ScopedEnv channels("NCCL_MAX_NCHANNELS", "2");
    digests[2] = digestAgreedSettings();
  }
  const std::string message = verdict(digests);
  EXPECT_NE(message.find("NCCL_ALGO differs between ranks: unset on ranks 0,1; Ring on rank 2"), std::string::npos)
      << message;
  EXPECT_NE(message.find("(also differs: NCCL_MAX_NCHANNELS)"), std::string::npos) << message;
}

TEST(SettingsDigest, ManyValuesStayShort) {
  std::vector<SettingsDigest> digests;
  for (int r = 0; r < 1000; ++r) {
    ScopedEnv slice("WEFT_SLICE_BYTES", std::to_string(4096 + 64 * (r % 7)).c_str());
    digests.push_back(digestAgreedSettings());
  }
  const std::string message = verdict(digests);
  EXPECT_NE(message.find("WEFT_SLICE_BYTES differs between ranks: 4096 on ranks 0,7,14,"), std::string::npos)
      << message;
  EXPECT_NE(message.find("; and 3 more values"), std::string::npos) << message;
  EXPECT_LT(message.size(), 1024u);
}

TEST(SettingsDigest, DifferentTablesCannotCompare) {
  std::vector<SettingsDigest> digests(2, digestAgreedSettings());
  digests[1].tableHash ^= 1;
  EXPECT_NE(verdict(digests).find("different settings tables"), std::string::npos);
}

}  // namespace
