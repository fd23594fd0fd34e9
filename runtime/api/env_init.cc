// weftCommInitFromEnv: a communicator from the launcher's environment (weftrun, torchrun,
// Open MPI, PMI, Slurm), so that tools and trainers need no code to distribute the unique id.
#include <cstdlib>
#include <string>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"
#include "runtime/api/api_call.h"
#include "runtime/api/export.h"
#include "runtime/comm/unique_id.h"
#include "weft/weft.h"

using namespace weft;

namespace {

struct LaunchPosition {
  int rank = 0;
  int size = 1;
  const char* source = "none (single rank)";
};

bool readPair(const char* rankVar, const char* sizeVar, const char* source, LaunchPosition* out) {
  const char* rank = getenv(rankVar);
  const char* size = getenv(sizeVar);
  if (!rank || !size) return false;
  out->rank = atoi(rank);
  out->size = atoi(size);
  out->source = source;
  return true;
}

LaunchPosition launchPosition() {
  LaunchPosition p;
  readPair("RANK", "WORLD_SIZE", "RANK/WORLD_SIZE", &p) ||
      readPair("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI", &p) ||
      readPair("PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "PMIx", &p) || readPair("PMI_RANK", "PMI_SIZE", "PMI", &p) ||
      readPair("SLURM_PROCID", "SLURM_NTASKS", "Slurm", &p);
  return p;
}

// A secret every rank of this job can compute without talking: WEFT_SECRET, else the job's
// identity (weaker: anyone who knows the job id and address can join).
BootstrapSecret jobSecret(const std::string& address) {
  if (const char* secret = settingText(Setting::WeftSecret)) return secretFromText(secret);
  std::string identity = address;
  for (const char* var : {"SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "TORCHELASTIC_RUN_ID", "PMI_JOBID"})
    if (const char* v = getenv(var)) identity += std::string("/") + v;
  return secretFromText(identity.c_str());
}

}  // namespace

WEFT_API ncclResult_t weftCommInitFromEnv(ncclComm_t* comm) {
  return apiCall("weftCommInitFromEnv", [&]() -> ncclResult_t {
    if (!comm) return fail(ncclInvalidArgument, "weftCommInitFromEnv: comm is NULL");
    // WEFT_BOOTSTRAP_PORT is used before ncclCommInitRank checks it; agreed settings are checked
    // after bootstrap, where a bad value on one rank fails every rank.
    WEFT_CHECK(validateSettings(SettingsToValidate::RankLocal));
    LaunchPosition position = launchPosition();
    if (position.size < 1 || position.rank < 0 || position.rank >= position.size)
      return fail(ncclInvalidArgument, "weftCommInitFromEnv: rank %d of %d from %s is out of range", position.rank,
                  position.size, position.source);
    ncclUniqueId id;
    std::string address;
    if (const char* fixed = settingText(Setting::NcclCommId)) {
      address = fixed;
    } else if (const char* host = getenv("MASTER_ADDR")) {
      const char* port = settingText(Setting::WeftBootstrapPort);
      if (!port) port = getenv("MASTER_PORT");
      if (!port) return fail(ncclInvalidArgument, "weftCommInitFromEnv: MASTER_ADDR is set but MASTER_PORT is not");
      address = std::string(host).find(':') != std::string::npos ? "[" + std::string(host) + "]:" + port
                                                                 : std::string(host) + ":" + port;
    }
    if (address.empty()) {
      if (position.size > 1)
        return fail(ncclInvalidArgument,
                    "weftCommInitFromEnv: %d ranks from %s but no rendezvous address: set NCCL_COMM_ID=host:port or "
                    "MASTER_ADDR and MASTER_PORT",
                    position.size, position.source);
      WEFT_CHECK(ncclGetUniqueId(&id));
    } else {
      UniqueIdContents contents;
      WEFT_CHECK(parseSocketAddress(address, "NCCL_COMM_ID/MASTER_ADDR", &contents.root));
      if (!settingText(Setting::WeftSecret)) WEFT_CHECK(allowPublicSecret("the rendezvous address and job id"));
      contents.secret = jobSecret(address);
      contents.rootAtRankZero = true;
      encodeUniqueId(contents, &id);
    }
    WEFT_INFO(kLogInit | kLogBootstrap, "weftCommInitFromEnv: rank %d of %d from %s, rendezvous %s", position.rank,
              position.size, position.source, address.empty() ? "(local)" : address.c_str());
    return ncclCommInitRank(comm, position.size, id, position.rank);
  });
}
