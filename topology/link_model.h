// The link model: for every class of link the topology can contain, its nominal bandwidth
// and latency. This table is the one place these numbers live; the cost model (algorithms/)
// reads it for links whose measured or reported bandwidth is unknown, and weft-topo prints it.
#pragma once

#include <string_view>

namespace weft {

enum class LinkType : int {
  NVLink = 0,   // GPU <-> GPU or GPU <-> NVSwitch, bandwidth per direction
  PCIe,         // device or bridge <-> its upstream bridge (bandwidth from gen x width)
  PCIeRoot,     // host bridge <-> the CPU package it hangs off
  InterSocket,  // package <-> package (UPI / xGMI / QPI)
  Memory,       // package <-> its NUMA node(s)
  Network,      // NIC <-> the network
  // Not a topology link: a socket between two processes of one host (TCP, or UCX over TCP, on
  // loopback), the hop same-host ranks make when shared memory is off (NCCL_SHM_DISABLE=1,
  // WEFT_TRANSPORT=tcp|ucx). Every byte crosses the kernel's socket stack twice.
  Loopback,
  Count,
};

struct LinkClassInfo {
  LinkType type;
  const char* name;    // short, stable: appears in dumps, JSON and weft-topo's table
  double nominalGBps;  // default bandwidth per direction, GB/s (1e9 bytes/s)
  double latencyUs;    // default one-way latency, microseconds
};

// The table entry for `type` (never null).
const LinkClassInfo& linkClassInfo(LinkType type);
const char* linkTypeName(LinkType type);
// Parses a name produced by linkTypeName; false when unknown.
bool parseLinkType(std::string_view name, LinkType* type);

// Usable PCIe bandwidth per lane and direction, GB/s, for generation 1..6 (0 when unknown):
// 0.25, 0.5, 0.985, 1.969, 3.938, 7.877 (encoding overhead already removed).
double pcieLaneGBps(int generation);
// Nominal NVLink bandwidth per link and direction, GB/s, for NVLink generation 1..5.
double nvlinkPerLinkGBps(int generation);

}  // namespace weft
