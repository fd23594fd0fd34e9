// What a rank whose call timed out learns from its peers before it fails: it asks every peer
// to dump its collective record and say where it stands -- on its host through their Unix
// sockets (status_client.h), on other hosts through their TCP endpoints (remote_status.h),
// all at once, for at most a second -- and returns that, with the culprit line
// (job_diagnosis.h), for the error message and the log.
#pragma once

#include <string>

struct ncclComm;

namespace weft {

// Lines to append to the time-out's message ("" when the comm has no peer to ask).
std::string askPeersAfterTimeout(ncclComm* comm);

}  // namespace weft
