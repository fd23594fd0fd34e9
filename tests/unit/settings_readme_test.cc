// The README's environment table and the declarations of common/settings_table.cc list the
// same variables: every declared setting has a row, and every WEFT_/NCCL_ name in the table is
// declared.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "common/settings.h"

namespace weft {
namespace {

// The WEFT_* and NCCL_* names in the "### Environment" section of the README.
std::set<std::string> readmeEnvironmentNames() {
  std::ifstream in(WEFT_README_PATH);
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const size_t start = readme.find("### Environment");
  if (start == std::string::npos) return {};
  const size_t end = readme.find("\n#", start + 1);
  const std::string section = readme.substr(start, end == std::string::npos ? std::string::npos : end - start);
  std::set<std::string> names;
  const std::regex name(R"(\b(WEFT|NCCL)_[A-Z0-9_]*[A-Z0-9])");
  for (auto it = std::sregex_iterator(section.begin(), section.end(), name); it != std::sregex_iterator(); ++it)
    names.insert(it->str());
  return names;
}

TEST(SettingsReadme, EnvironmentTableListsExactlyTheDeclaredSettings) {
  const std::set<std::string> documented = readmeEnvironmentNames();
  ASSERT_FALSE(documented.empty()) << "no \"### Environment\" section in " << WEFT_README_PATH;
  for (const SettingSpec& spec : allSettings())
    EXPECT_TRUE(documented.count(spec.name)) << spec.name << " is declared but missing from README.md's table";
  for (const std::string& name : documented)
    EXPECT_NE(findSetting(name), nullptr)
        << name << " is in README.md's table but not declared in common/settings_table.cc";
}

}  // namespace
}  // namespace weft
