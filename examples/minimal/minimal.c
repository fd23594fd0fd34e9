/* The smallest weft program: a communicator from the launcher's environment, an all-reduce
 * and a broadcast on host memory, then teardown. Every call is plain NCCL except the init.
 *
 *   cc minimal.c -I<weft>/include -L<weft>/lib -lweft -o minimal
 *   weftrun -n 4 ./minimal              (or torchrun, mpirun, srun: weftCommInitFromEnv reads them)
 */
#include <stdio.h>
#include <stdlib.h>

#include "nccl.h"
#include "weft/weft.h"

#define CHECK(call)                                                                                   \
  do {                                                                                                \
    ncclResult_t r_ = (call);                                                                         \
    if (r_ != ncclSuccess) {                                                                          \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

int main(void) {
  ncclComm_t comm;
  CHECK(weftCommInitFromEnv(&comm));
  int rank, nranks;
  CHECK(ncclCommUserRank(comm, &rank));
  CHECK(ncclCommCount(comm, &nranks));

  enum { N = 1024 };
  float* data = malloc(N * sizeof(float));
  for (int i = 0; i < N; ++i) data[i] = (float)(rank + 1);

  /* Sum over ranks, in place: every element becomes 1 + 2 + ... + nranks. */
  CHECK(ncclAllReduce(data, data, N, ncclFloat32, ncclSum, comm, NULL));
  const float sum = nranks * (nranks + 1) / 2.0f;
  for (int i = 0; i < N; ++i)
    if (data[i] != sum) {
      fprintf(stderr, "rank %d: all-reduce gave %g at %d, expected %g\n", rank, data[i], i, sum);
      return 1;
    }

  /* Rank 0's values to everyone. */
  for (int i = 0; i < N; ++i) data[i] = rank == 0 ? (float)i : -1.0f;
  CHECK(ncclBroadcast(data, data, N, ncclFloat32, 0, comm, NULL));
  for (int i = 0; i < N; ++i)
    if (data[i] != (float)i) {
      fprintf(stderr, "rank %d: broadcast gave %g at %d, expected %d\n", rank, data[i], i, i);
      return 1;
    }

  printf("rank %d of %d: all-reduce and broadcast correct\n", rank, nranks);
  free(data);
  CHECK(ncclCommDestroy(comm));
  return 0;
}
