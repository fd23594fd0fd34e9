// Malformed, truncated or foreign topology files are refused with a message that names the file
// and the problem; nothing crashes.
#include <gtest/gtest.h>

#include "common/status.h"
#include "topology/topology_xml.h"
#include "topology_test_util.h"

namespace weft {
namespace {

using testing::fixturePath;

struct BadFile {
  const char* name;
  std::string content;
  const char* problem;  // expected in the message
};

void expectRefused(const std::string& path, const char* problem) {
  TopologyModel m;
  clearLastError();
  EXPECT_EQ(loadTopologyFile(path, &m), ncclInvalidArgument) << path;
  const std::string& msg = lastErrorMessage();
  EXPECT_NE(msg.find(path), std::string::npos) << "message does not name the file: " << msg;
  EXPECT_NE(msg.find(problem), std::string::npos) << "message does not say \"" << problem << "\": " << msg;
}

TEST(TopologyXml, TruncatedFixtureIsRefusedAtEveryCut) {
  std::string text = testing::readFile(fixturePath("workstation_4gpu.xml"));
  ASSERT_GT(text.size(), 1000u);
  std::string path = testing::tempPath("truncated.xml");
  // Cut inside the tree at several places, including inside a tag and inside a value.
  for (size_t cut : {text.size() / 7, text.size() / 3, text.size() / 2, text.size() - 20, text.size() - 12}) {
    testing::writeFile(path, text.substr(0, cut));
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expectRefused(path, "truncated");
  }
  std::remove(path.c_str());
}

TEST(TopologyXml, MalformedFilesAreRefused) {
  std::string good = testing::readFile(fixturePath("cloud_vm.xml"));
  size_t infoPos = good.find("<info name=\"Address\"");
  ASSERT_NE(infoPos, std::string::npos);
  std::string mismatched = good;
  mismatched.replace(good.find("</object>", infoPos), 9, "</objext>");
  std::string badNvlink = testing::readFile(fixturePath("workstation_4gpu.xml"));
  badNvlink.insert(badNvlink.find("<info name=\"PCIVendor\""), "<info name=\"WeftNVLink\" value=\"NVSwitch fast\"/>");
  std::string badSpeed = good;
  badSpeed.replace(badSpeed.find("value=\"25\""), 10, "value=\"abc\"");
  std::string unknownPeer = testing::readFile(fixturePath("workstation_4gpu.xml"));
  unknownPeer.insert(unknownPeer.find("<info name=\"PCIVendor\""),
                     "<info name=\"WeftNVLink\" value=\"0000:77:00.0 50\"/>");
  const BadFile files[] = {
      {"empty.xml", "", "empty"},
      {"blank.xml", "  \n\n", "empty"},
      {"mismatched.xml", mismatched, "</objext> closes <object>"},
      {"unquoted.xml", "<?xml version=\"1.0\"?>\n<topology version=2.0></topology>\n", "not quoted"},
      {"nccl.xml", "<system version=\"1\"><cpu numaid=\"0\"/></system>", "NCCL's own topology format"},
      {"html.xml", "<html><body>hello</body></html>", "expected <topology>"},
      {"two_roots.xml", "<topology version=\"2.0\"></topology><topology/>", "second root"},
      {"not_hwloc.xml", "<topology version=\"2.0\"><object type=\"Bogus\"/></topology>", "hwloc refused it"},
      {"garbage.txt", "this is not a topology at all", "neither XML nor a synthetic description"},
      {"bad_nvlink.xml", badNvlink, "WeftNVLink=\"NVSwitch fast\""},
      {"unknown_peer.xml", unknownPeer, "is not a GPU of this topology"},
      {"bad_speed.xml", badSpeed, "WeftSpeedGbps=\"abc\" is not a number"},
      {"binary.xml", std::string("<topology\0\x01\x02", 12), "NUL byte"},
  };
  for (const BadFile& f : files) {
    SCOPED_TRACE(f.name);
    std::string path = testing::tempPath(f.name);
    testing::writeFile(path, f.content);
    expectRefused(path, f.problem);
    std::remove(path.c_str());
  }
}

TEST(TopologyXml, MissingFileIsRefused) { expectRefused("/nonexistent/weft/topology.xml", "cannot open"); }

TEST(TopologyXml, CheckerReportsLines) {
  EXPECT_EQ(checkTopologyXml("<topology version=\"2.0\">\n<object a='1'/>\n</topology>\n"), "");
  EXPECT_EQ(checkTopologyXml("<topology version='2.0'>\n<object>\n</info>\n</topology>"),
            "line 3: </info> closes <object> opened on line 2");
  EXPECT_NE(checkTopologyXml("<topology version='2.0'>\n<object>\n").find("opened on line 2 (truncated?)"),
            std::string::npos);
  EXPECT_NE(checkTopologyXml("<topology a=\"1").find("truncated"), std::string::npos);
  EXPECT_NE(checkTopologyXml("<!-- x").find("comment never closed"), std::string::npos);
  // What hwloc 2.9 itself crashes, asserts or spins on (found by tests/fuzz/fuzz_topology_xml).
  EXPECT_NE(checkTopologyXml("<topology version='2.0'>\n<object type='Core' cpuset='0x3'/>\n</topology>")
                .find("line 2: <object> has cpuset without complete_cpuset"),
            std::string::npos);
  EXPECT_NE(checkTopologyXml("<topology version='2.0'>\n<object cpuset=',x2' complete_cpuset='0x2'/>\n</topology>")
                .find("cpuset of <object> is not an hwloc bitmap"),
            std::string::npos);
  EXPECT_EQ(checkTopologyXml(
                "<topology version='2.0'><object cpuset='0xf...f,0x1' complete_cpuset='0xff,0x00000001'/></topology>"),
            "");
  EXPECT_NE(checkTopologyXml("<topology version='2.0'>\n<object type='PU' os_iodex='0'/>\n</topology>")
                .find("needs an os_index"),
            std::string::npos);
  EXPECT_NE(checkTopologyXml("<topology version='2.0'><object type='NUMANode' os_index='4294967295'/></topology>")
                .find("os_index"),
            std::string::npos);
  // hwloc's aliases of the same types (found by fuzzing: "NUMA" without an index ran for minutes).
  for (const char* alias : {"NUMA", "numanode", "Node", "pu"})
    EXPECT_NE(checkTopologyXml(std::string("<topology version='2.0'><object type='") + alias + "'/></topology>")
                  .find("needs an os_index"),
              std::string::npos)
        << alias;
}

TEST(TopologyXml, Hwloc1FilesAreRefusedWithAHint) {
  // hwloc 2.9 dereferences the missing cpuset of a 1.x NUMA node (a SEGV found by CI's fuzzing).
  const std::string v1 =
      "<topology>\n"
      "<object type='Machine' os_index='0' cpuset='0x1' complete_cpuset='0x1' nodeset='0x1' complete_nodeset='0x1'>\n"
      "<object type='NUMANode' os_index='0' nodeset='0x1' complete_nodeset='0x1'>\n"
      "<object type='PU' os_index='0' cpuset='0x1' complete_cpuset='0x1' nodeset='0x1' complete_nodeset='0x1'/>\n"
      "</object></object></topology>\n";
  TopologyModel model;
  EXPECT_EQ(loadTopologyXmlText(v1, "v1.xml", &model), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("line 1: <topology> has no version: an hwloc 1.x file"), std::string::npos)
      << lastErrorMessage();
  EXPECT_NE(lastErrorMessage().find("lstopo --of xml"), std::string::npos);
  EXPECT_NE(checkTopologyXml("<topology version='1.11'/>").find("has version \"1.11\", not 2.x"), std::string::npos);
  EXPECT_NE(checkTopologyXml("<topology version='2.x'/>").find("not 2.x"), std::string::npos);
  EXPECT_EQ(checkTopologyXml("<topology version='2.1'/>"), "");
}

TEST(TopologyXml, EveryPrefixOfAFixtureIsHandled) {
  // No prefix may crash or be accepted, except the whole file (and the whole file minus its
  // trailing newline).
  std::string text = testing::readFile(fixturePath("cloud_vm.xml"));
  for (size_t cut = 0; cut + 1 < text.size(); cut += 7) {
    std::string prefix = text.substr(0, cut);
    TopologyModel m;
    EXPECT_NE(loadTopologyXmlText(prefix, "prefix", &m), ncclSuccess) << "accepted a prefix of " << cut << " bytes";
  }
}

TEST(TopologyXml, SyntheticErrorsAreRefused) {
  TopologyModel m;
  EXPECT_EQ(loadTopologySynthetic("pack:two core:", &m), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("pack:two core:"), std::string::npos);
}

TEST(TopologyXml, LstopoCanReadOurDump) {
  if (std::system("command -v lstopo-no-graphics >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "lstopo-no-graphics not installed";
  TopologyModel m;
  ASSERT_EQ(loadTopologyFile(fixturePath("dgx_h100.xml"), &m), ncclSuccess);
  std::string path = testing::tempPath("for_lstopo.xml");
  ASSERT_EQ(writeTopologyXml(m, path), ncclSuccess);
  std::string cmd = "lstopo-no-graphics -i " + path + " --only osdev 2>&1 | grep -c mlx5_";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[64] = {};
  ASSERT_NE(fgets(buf, sizeof buf, p), nullptr);
  pclose(p);
  EXPECT_EQ(std::atoi(buf), 8);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace weft
