/* ABI check: this file is compiled against NVIDIA's own nccl.h (from the CUDA toolkit), not
 * weft's, and linked against weft's libnccl.so.2. It runs as one rank of a job started by
 * weftrun: the id comes from NCCL_COMM_ID (set here from MASTER_ADDR/MASTER_PORT), exactly as
 * an unmodified NCCL program would get it. */
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                   \
  do {                                                                                                \
    ncclResult_t r_ = (call);                                                                         \
    if (r_ != ncclSuccess) {                                                                          \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

int main(void) {
  const char* rankText = getenv("RANK");
  const char* sizeText = getenv("WORLD_SIZE");
  const char* host = getenv("MASTER_ADDR");
  const char* port = getenv("MASTER_PORT");
  if (!rankText || !sizeText || !host || !port) {
    fprintf(stderr, "run me under weftrun\n");
    return 2;
  }
  int rank = atoi(rankText), nranks = atoi(sizeText);
  char commId[256];
  snprintf(commId, sizeof(commId), "%s:%s", host, port);
  setenv("NCCL_COMM_ID", commId, 1);

  int version = 0;
  CHECK(ncclGetVersion(&version));
  if (version != NCCL_VERSION_CODE) {
    fprintf(stderr, "version %d, header says %d\n", version, NCCL_VERSION_CODE);
    return 3;
  }
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 1;
  config.commName = "abi";
  ncclComm_t comm;
  CHECK(ncclCommInitRankConfig(&comm, nranks, id, rank, &config));
  int count = 0, me = -1;
  CHECK(ncclCommCount(comm, &count));
  CHECK(ncclCommUserRank(comm, &me));
  if (count != nranks || me != rank) {
    fprintf(stderr, "count %d rank %d, expected %d %d\n", count, me, nranks, rank);
    return 4;
  }

  enum { N = 1000 };
  double d[N];
  int32_t i32[N];
  uint16_t half[N]; /* ncclFloat16 bit patterns */
  for (int i = 0; i < N; ++i) {
    d[i] = rank + i * 0.5;
    i32[i] = (rank + 1) * (i % 13);
    half[i] = (uint16_t)(0x3c00); /* 1.0 */
  }
  CHECK(ncclAllReduce(d, d, N, ncclFloat64, ncclSum, comm, NULL));
  CHECK(ncclAllReduce(i32, i32, N, ncclInt32, ncclMax, comm, NULL));
  CHECK(ncclGroupStart());
  CHECK(ncclAllReduce(half, half, N, ncclFloat16, ncclSum, comm, NULL));
  CHECK(ncclGroupEnd());
  int wrong = 0;
  double rankSum = nranks * (nranks - 1) / 2.0;
  for (int i = 0; i < N; ++i) {
    if (d[i] != rankSum + nranks * i * 0.5) ++wrong;
    if (i32[i] != nranks * (i % 13)) ++wrong;
  }
  /* nranks (a small integer) as a half: exponent and mantissa of the exact value. */
  float expectedHalf = (float)nranks;
  for (int i = 0; i < N; ++i) {
    int exponent = ((half[i] >> 10) & 0x1f) - 15;
    float value = (1.0f + (half[i] & 0x3ff) / 1024.0f) * (float)(1 << exponent);
    if (value != expectedHalf) ++wrong;
  }
  ncclResult_t bad = ncclAllReduce(d, d, N, (ncclDataType_t)99, ncclSum, comm, NULL);
  if (bad != ncclInvalidArgument) ++wrong;
  CHECK(ncclCommFinalize(comm));
  CHECK(ncclCommDestroy(comm));
  printf("rank %d: ABI allreduce %s (%d wrong)\n", rank, wrong ? "FAILED" : "OK", wrong);
  return wrong ? 5 : 0;
}
