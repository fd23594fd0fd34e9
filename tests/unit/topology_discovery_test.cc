// Live discovery on this machine agrees with hwloc's own tools; the environment switches
// (WEFT_TOPO_FILE / NCCL_TOPO_FILE, WEFT_TOPO_DUMP_FILE / NCCL_TOPO_DUMP_FILE, WEFT_BIND_THREADS)
// work; progress-thread binding binds.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <thread>

#include "common/status.h"
#include "topology/cpu_binding.h"
#include "topology/host_identity.h"
#include "topology/hwloc_discovery.h"
#include "topology/topology_loader.h"
#include "topology/topology_print.h"
#include "topology/topology_xml.h"
#include "topology_test_util.h"

namespace weft {
namespace {

bool haveTool(const char* tool) {
  return std::system((std::string("command -v ") + tool + " >/dev/null 2>&1").c_str()) == 0;
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

int count(const std::string& what) { return std::atoi(run("hwloc-calc --number-of " + what + " all").c_str()); }

TEST(TopologyDiscovery, AgreesWithHwlocTools) {
  if (!haveTool("hwloc-calc") || !haveTool("lstopo-no-graphics"))
    GTEST_SKIP() << "hwloc tools (hwloc package) not installed";
  TopologyModel m;
  ASSERT_EQ(discoverTopology(&m), ncclSuccess) << lastErrorMessage();
  EXPECT_EQ(m.packages, count("package"));
  EXPECT_EQ(m.numaNodes, count("numanode"));
  EXPECT_EQ(m.cores, count("core"));
  EXPECT_EQ(m.pus, count("pu"));
  EXPECT_EQ(static_cast<int>(m.packageList.size()), m.packages);
  EXPECT_EQ(static_cast<int>(m.numaList.size()), m.numaNodes);

  // PCI devices: lstopo prints one "PCI <busid> ..." line per device with its default filter,
  // which is also what discovery keeps.
  std::string pci = run("lstopo-no-graphics --only pcidev 2>/dev/null");
  std::set<std::string> lstopoBus;
  for (size_t pos = 0; (pos = pci.find("PCI ", pos)) != std::string::npos; pos += 4) {
    std::string bus = pci.substr(pos + 4, pci.find_first_of(" \n", pos + 4) - pos - 4);
    lstopoBus.insert(normalizeBusId(bus));
  }
  std::set<std::string> ours;
  for (const TopoNode& n : m.nodes)
    if ((n.type == TopoNodeType::PciDevice || n.type == TopoNodeType::Gpu || n.type == TopoNodeType::Nic) &&
        !n.busId.empty())
      ours.insert(n.busId);
  EXPECT_EQ(ours, lstopoBus);

  // Every network / verbs OS device lstopo shows belongs to one of our NICs.
  std::string osdev = run("lstopo-no-graphics --only osdev 2>/dev/null");
  std::istringstream lines(osdev);
  std::string line;
  int netdevs = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("Net", 0) != 0 && line.rfind("OpenFabrics", 0) != 0) continue;
    size_t q = line.find('"');
    std::string name = line.substr(q + 1, line.rfind('"') - q - 1);
    ++netdevs;
    EXPECT_NE(m.nicByName(name), nullptr) << name;
  }
  if (netdevs > 0) {
    EXPECT_FALSE(m.nics.empty());
  }

  // Caches: same count per level as hwloc-calc reports.
  for (const CacheLevelInfo& c : m.caches) {
    std::string type = "l" + std::to_string(c.level) + (c.kind == 'i' ? "icache" : "cache");
    EXPECT_EQ(c.count, count(type)) << type;
  }
  EXPECT_FALSE(m.xml.empty());
}

TEST(TopologyDiscovery, LiveDumpLoadDumpIsStable) {
  TopologyModel live, loaded, again;
  ASSERT_EQ(discoverTopology(&live), ncclSuccess) << lastErrorMessage();
  std::string d1 = testing::tempPath("live1.xml"), d2 = testing::tempPath("live2.xml");
  ASSERT_EQ(writeTopologyXml(live, d1), ncclSuccess);
  ASSERT_EQ(loadTopologyFile(d1, &loaded), ncclSuccess) << lastErrorMessage();
  ASSERT_EQ(writeTopologyXml(loaded, d2), ncclSuccess);
  ASSERT_EQ(loadTopologyFile(d2, &again), ncclSuccess) << lastErrorMessage();
  EXPECT_EQ(testing::readFile(d2), again.xml);
  EXPECT_EQ(testing::modelAnswers(live), testing::modelAnswers(loaded));
  live.source = loaded.source;
  EXPECT_EQ(topologyToJson(live), topologyToJson(loaded));
  std::remove(d1.c_str());
  std::remove(d2.c_str());
}

TEST(TopologyDiscovery, EnvironmentLoadsAndDumps) {
  for (auto [fileVar, dumpVar] :
       {std::pair{"WEFT_TOPO_FILE", "WEFT_TOPO_DUMP_FILE"}, std::pair{"NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE"}}) {
    SCOPED_TRACE(fileVar);
    std::string dump = testing::tempPath(std::string(dumpVar) + ".xml");
    ::setenv(fileVar, testing::fixturePath("workstation_4gpu.xml").c_str(), 1);
    ::setenv(dumpVar, dump.c_str(), 1);
    TopologyModel m;
    ncclResult_t r = loadTopology(&m);
    ::unsetenv(fileVar);
    ::unsetenv(dumpVar);
    ASSERT_EQ(r, ncclSuccess) << lastErrorMessage();
    EXPECT_EQ(m.gpus.size(), 4u);
    EXPECT_EQ(testing::readFile(dump), m.xml);
    std::remove(dump.c_str());
  }
  // A bad file in the environment is an error, not a silent fallback to discovery.
  ::setenv("WEFT_TOPO_FILE", "/nonexistent/topo.xml", 1);
  TopologyModel m;
  EXPECT_EQ(loadTopology(&m), ncclInvalidArgument);
  ::unsetenv("WEFT_TOPO_FILE");
  EXPECT_NE(lastErrorMessage().find("/nonexistent/topo.xml"), std::string::npos);
}

TEST(TopologyDiscovery, DescribesThisRank) {
  TopologyModel m;
  ASSERT_EQ(discoverTopology(&m), ncclSuccess);
  RankPlacement r = describeThisRank(m, -1);
  EXPECT_FALSE(r.hostId.empty());
  EXPECT_FALSE(r.cpuset.empty());
  EXPECT_EQ(r.gpuIndex, -1);
  if (m.numaNodes == 1) {
    EXPECT_EQ(r.numaNode, m.numaList[0].osIndex);
  }
  if (!m.nics.empty()) {
    EXPECT_FALSE(r.nicName.empty());
  }
  ::setenv("WEFT_HOSTNAME", "fake-host-7", 1);
  EXPECT_EQ(describeThisRank(m, -1).hostId, "fake-host-7");
  ::unsetenv("WEFT_HOSTNAME");
  // hostname:boot-id
  EXPECT_NE(hostIdentity().find(':'), std::string::npos);
}

TEST(TopologyDiscovery, BindsProgressThreadNearDevice) {
  TopologyModel m;
  ASSERT_EQ(discoverTopology(&m), ncclSuccess);
  ASSERT_FALSE(m.packageList.empty());
  std::string target = m.packageList[0].cpuset;
  bool bound = false;
  std::string after;
  ncclResult_t r = ncclSuccess;
  std::thread t([&] {
    r = bindThreadNear(target, &bound);
    after = currentCpuBinding();
  });
  t.join();
  ASSERT_EQ(r, ncclSuccess) << lastErrorMessage();
  EXPECT_TRUE(bound);
  EXPECT_FALSE(after.empty());
  EXPECT_EQ(numaNodeOfCpuset(m, after), m.numaNodes == 1 ? m.numaList[0].osIndex : numaNodeOfCpuset(m, after));

  ::setenv("WEFT_BIND_THREADS", "0", 1);
  std::thread t2([&] { r = bindThreadNear(target, &bound); });
  t2.join();
  ::unsetenv("WEFT_BIND_THREADS");
  EXPECT_EQ(r, ncclSuccess);
  EXPECT_FALSE(bound);

  // CPUs this machine does not have (a model from another machine): nothing to bind to.
  std::thread t3([&] { r = bindThreadNear("0xf0000000,0x00000000", &bound); });
  t3.join();
  EXPECT_EQ(r, ncclSuccess);
  EXPECT_FALSE(bound);
  EXPECT_EQ(bindThreadNear("not-a-cpuset", &bound), ncclInvalidArgument);
}

}  // namespace
}  // namespace weft
