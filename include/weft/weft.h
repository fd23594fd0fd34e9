/* weft's native extensions to the NCCL API. */
#ifndef WEFT_WEFT_H_
#define WEFT_WEFT_H_

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* weft's version, written only here: CMake reads these three lines (project version,
 * libweft.so's version, the installed package's version). */
#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0

/* weft's own version as MAJOR*10000 + MINOR*100 + PATCH (ncclGetVersion reports the NCCL
 * API version weft implements, NCCL_VERSION_CODE of nccl.h). */
ncclResult_t weftGetVersion(int* version);
const char* weftVersionString(void);

/* Forms a communicator from the launch environment, trying in order:
 *   weftrun / torchrun: RANK, WORLD_SIZE, (LOCAL_RANK), MASTER_ADDR, MASTER_PORT
 *   Open MPI:           OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
 *   PMI / PMIx:         PMI_RANK, PMI_SIZE / PMIX_RANK
 *   Slurm:              SLURM_PROCID, SLURM_NTASKS
 * The rendezvous address is NCCL_COMM_ID (host:port) if set, else MASTER_ADDR:MASTER_PORT
 * (WEFT_BOOTSTRAP_PORT overrides the port, for launchers that use MASTER_PORT themselves).
 * Rank 0 hosts the rendezvous. WEFT_SECRET (32 hex digits, set by weftrun) is the secret
 * the ranks prove; without it one is derived from the job's identity. With none of these
 * variables the communicator has a single rank. */
ncclResult_t weftCommInitFromEnv(ncclComm_t* comm);

/* Sets how long this communicator's collectives may wait without progress before failing
 * (seconds, > 0): WEFT_TIMEOUT for this communicator alone, as torch.distributed's `timeout=`
 * asks. In a group of calls on several communicators the smallest applies. */
ncclResult_t weftCommSetTimeout(ncclComm_t comm, double seconds);

/* Host memory that the other ranks on this host can map: what ncclMemAlloc returns where there is
 * no GPU. With such buffers a large all-reduce on one host reads and writes the peers' buffers
 * directly (docs/algorithms.md, "direct"). Where a GPU is present ncclMemAlloc returns device
 * memory, as NCCL's does; this call keeps the host memory. Free with ncclMemFree. */
ncclResult_t weftMemAllocHost(void** ptr, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H_ */
