/* ABI check of every collective: compiled against NVIDIA's own nccl.h (CUDA toolkit), not
 * weft's, linked against weft's libnccl.so.2, run as one rank of a weftrun job (the id comes
 * from NCCL_COMM_ID, as for an unmodified NCCL program). Each call runs once on host memory
 * and every rank checks its result against values computed here from (rank, index). */
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                                  \
  do {                                                                                                               \
    ncclResult_t r_ = (call);                                                                                        \
    if (r_ != ncclSuccess) {                                                                                         \
      fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #call, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
      return 1;                                                                                                      \
    }                                                                                                                \
  } while (0)

enum { N = 257 }; /* elements per rank block: odd, so nothing lines up by accident */

static int rank, nranks;
static int wrongTotal;

/* The value rank r contributes at index i (distinct for every (r, i), small enough that sums
 * over 64 ranks stay exact in int32 and double). */
static int32_t value(int r, size_t i) { return (int32_t)(r * 100003 + (int32_t)(i % 100003) + 1); }

static void expectInt(const char* what, const int32_t* got, size_t i, int32_t want) {
  if (got[i] == want) return;
  if (wrongTotal < 10) fprintf(stderr, "rank %d: %s: element %zu is %d, expected %d\n", rank, what, i, got[i], want);
  ++wrongTotal;
}

static int32_t* ints(size_t count) {
  int32_t* p = (int32_t*)malloc(count * sizeof(int32_t));
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  for (size_t i = 0; i < count; ++i) p[i] = -7; /* a value no check expects */
  return p;
}

int main(void) {
  const char* rankText = getenv("RANK");
  const char* sizeText = getenv("WORLD_SIZE");
  const char* host = getenv("MASTER_ADDR");
  const char* port = getenv("MASTER_PORT");
  if (!rankText || !sizeText || !host || !port) {
    fprintf(stderr, "run me under weftrun\n");
    return 2;
  }
  rank = atoi(rankText);
  nranks = atoi(sizeText);
  char commId[256];
  snprintf(commId, sizeof(commId), "%s:%s", host, port);
  setenv("NCCL_COMM_ID", commId, 1);

  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, nranks, id, rank));

  const int n = nranks;
  const size_t total = (size_t)N * n;
  int32_t* send = ints(total);
  int32_t* recv = ints(total);
  int32_t* buf = ints(total);

  /* Broadcast, out of place, from the last rank. */
  int root = n - 1;
  for (size_t i = 0; i < N; ++i) send[i] = value(rank, i);
  CHECK(ncclBroadcast(send, recv, N, ncclInt32, root, comm, NULL));
  for (size_t i = 0; i < N; ++i) expectInt("ncclBroadcast", recv, i, value(root, i));

  /* Bcast (the legacy in-place form) from rank 0. */
  for (size_t i = 0; i < N; ++i) buf[i] = value(rank, i);
  CHECK(ncclBcast(buf, N, ncclInt32, 0, comm, NULL));
  for (size_t i = 0; i < N; ++i) expectInt("ncclBcast", buf, i, value(0, i));

  /* Reduce (sum) to rank 1 (or 0 alone); only the root's receive buffer is defined. */
  root = n > 1 ? 1 : 0;
  for (size_t i = 0; i < total; ++i) recv[i] = -7;
  for (size_t i = 0; i < N; ++i) send[i] = value(rank, i);
  CHECK(ncclReduce(send, recv, N, ncclInt32, ncclSum, root, comm, NULL));
  if (rank == root) {
    for (size_t i = 0; i < N; ++i) {
      int32_t want = 0;
      for (int r = 0; r < n; ++r) want += value(r, i);
      expectInt("ncclReduce", recv, i, want);
    }
  }

  /* AllGather: block r of the result is rank r's send buffer. */
  for (size_t i = 0; i < N; ++i) send[i] = value(rank, i);
  CHECK(ncclAllGather(send, recv, N, ncclInt32, comm, NULL));
  for (size_t i = 0; i < total; ++i) expectInt("ncclAllGather", recv, i, value((int)(i / N), i % N));

  /* ReduceScatter (max): rank r receives the maximum over ranks of block r. */
  for (size_t i = 0; i < total; ++i) send[i] = value(rank, i) * ((rank + (int)i) % 2 ? 1 : -1);
  CHECK(ncclReduceScatter(send, recv, N, ncclInt32, ncclMax, comm, NULL));
  for (size_t i = 0; i < N; ++i) {
    size_t j = (size_t)rank * N + i;
    int32_t want = INT32_MIN;
    for (int r = 0; r < n; ++r) {
      int32_t v = value(r, j) * ((r + (int)j) % 2 ? 1 : -1);
      if (v > want) want = v;
    }
    expectInt("ncclReduceScatter", recv, i, want);
  }

  /* AlltoAll: block j of rank r's result is block r of rank j's send buffer. */
  for (size_t i = 0; i < total; ++i) send[i] = value(rank, i);
  CHECK(ncclAlltoAll(send, recv, N, ncclInt32, comm, NULL));
  for (size_t i = 0; i < total; ++i) expectInt("ncclAlltoAll", recv, i, value((int)(i / N), (size_t)rank * N + i % N));

  /* Gather to rank 0. */
  for (size_t i = 0; i < total; ++i) recv[i] = -7;
  for (size_t i = 0; i < N; ++i) send[i] = value(rank, i);
  CHECK(ncclGather(send, recv, N, ncclInt32, 0, comm, NULL));
  if (rank == 0)
    for (size_t i = 0; i < total; ++i) expectInt("ncclGather", recv, i, value((int)(i / N), i % N));

  /* Scatter from the last rank. */
  root = n - 1;
  for (size_t i = 0; i < total; ++i) send[i] = value(rank, i);
  CHECK(ncclScatter(send, recv, N, ncclInt32, root, comm, NULL));
  for (size_t i = 0; i < N; ++i) expectInt("ncclScatter", recv, i, value(root, (size_t)rank * N + i));

  /* Send/Recv around the ring in one group: receive rank-1's data, send to rank+1. */
  for (size_t i = 0; i < N; ++i) send[i] = value(rank, i);
  CHECK(ncclGroupStart());
  CHECK(ncclSend(send, N, ncclInt32, (rank + 1) % n, comm, NULL));
  CHECK(ncclRecv(recv, N, ncclInt32, (rank - 1 + n) % n, comm, NULL));
  CHECK(ncclGroupEnd());
  for (size_t i = 0; i < N; ++i) expectInt("ncclSend/ncclRecv", recv, i, value((rank - 1 + n) % n, i));

  /* Two collectives in one group. */
  for (size_t i = 0; i < N; ++i) send[i] = value(rank, i);
  for (size_t i = 0; i < N; ++i) buf[i] = value(rank, i + 5);
  CHECK(ncclGroupStart());
  CHECK(ncclAllGather(send, recv, N, ncclInt32, comm, NULL));
  CHECK(ncclBcast(buf, N, ncclInt32, n - 1, comm, NULL));
  CHECK(ncclGroupEnd());
  for (size_t i = 0; i < total; ++i) expectInt("grouped ncclAllGather", recv, i, value((int)(i / N), i % N));
  for (size_t i = 0; i < N; ++i) expectInt("grouped ncclBcast", buf, i, value(n - 1, i + 5));

  /* AllReduce with a pre-multiplied sum: result = scalar * sum over ranks (exact in double). */
  double scalar = 0.25;
  ncclRedOp_t preMulSum;
  CHECK(ncclRedOpCreatePreMulSum(&preMulSum, &scalar, ncclFloat64, ncclScalarHostImmediate, comm));
  scalar = 1000.0; /* host-immediate: the value was read at creation, later changes do not count */
  double* d = (double*)malloc(N * sizeof(double));
  double* dOut = (double*)malloc(N * sizeof(double));
  if (!d || !dOut) return 2;
  for (size_t i = 0; i < N; ++i) {
    d[i] = (double)value(rank, i);
    dOut[i] = -1.0;
  }
  CHECK(ncclAllReduce(d, dOut, N, ncclFloat64, preMulSum, comm, NULL));
  for (size_t i = 0; i < N; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += 0.25 * (double)value(r, i);
    if (dOut[i] != want) {
      if (wrongTotal < 10)
        fprintf(stderr, "rank %d: premulsum allreduce: element %zu is %.17g, expected %.17g\n", rank, i, dOut[i], want);
      ++wrongTotal;
    }
  }
  CHECK(ncclRedOpDestroy(preMulSum, comm));

  free(d);
  free(dOut);
  free(send);
  free(recv);
  free(buf);
  CHECK(ncclCommFinalize(comm));
  CHECK(ncclCommDestroy(comm));
  printf("rank %d: ABI collectives %s (%d wrong)\n", rank, wrongTotal ? "FAILED" : "OK", wrongTotal);
  return wrongTotal ? 5 : 0;
}
