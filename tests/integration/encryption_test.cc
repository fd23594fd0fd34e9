// WEFT_ENCRYPTION=tls (docs/security.md): the bootstrap and TCP between ranks run TLS 1.3, keyed
// from the job secret or from certificates. Results stay right over it; a rank whose certificate
// another CA signed is refused at the bootstrap with an error naming TLS; a secret computed from
// public data, a transport between hosts that cannot encrypt and an incomplete set of
// certificate files are init errors naming what to set. That the bytes on the wire are
// ciphertext is shown between two network namespaces (tests/netns/encryption.sh).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/support/multiprocess.h"
#include "tests/support/reference.h"

using namespace weft::testing;

namespace {

// All-reduces from a few bytes to several TCP slots' worth, each against the reference.
int allReduceChecked(ncclComm_t comm, int rank, int nranks) {
  unsigned seed = 4100;
  for (size_t count : {size_t(3), size_t(4099), size_t(700001)}) {
    std::vector<float> send(count), recv(count);
    fillInput(send.data(), count, rank, ncclFloat32, ncclSum, ++seed);
    if (ncclAllReduce(send.data(), recv.data(), count, ncclFloat32, ncclSum, comm, nullptr) != ncclSuccess) {
      fprintf(stderr, "rank %d all-reduce of %zu: %s\n", rank, count, ncclGetLastError(comm));
      return 10;
    }
    if (countMismatches(recv.data(), count, nranks, ncclFloat32, ncclSum, seed, "all-reduce")) return 11;
  }
  return 0;
}

// A CA and a certificate it signed for a rank, made by the openssl command (Debian's openssl).
struct Certificates {
  std::string ca, cert, key;
};

class TlsCertificates : public ::testing::Test {
 protected:
  void SetUp() override {
    if (system("openssl version >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "skipped: the openssl command is not installed (tools/scripts/install-deps.sh)";
    char pattern[] = "/tmp/weft-tls-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (!dir_.empty()) (void)!system(("rm -rf " + dir_).c_str());
    for (const char* variable :
         {"WEFT_TRANSPORT", "WEFT_ENCRYPTION", "WEFT_TIMEOUT", "WEFT_TLS_CERT", "WEFT_TLS_KEY", "WEFT_TLS_CA"})
      unsetenv(variable);
  }
  // A fresh CA called `name`, and a certificate it signed.
  Certificates issue(const std::string& name) {
    const std::string at = dir_ + "/" + name;
    const std::string curve = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::string commands = "openssl req -x509 " + curve + " -keyout " + at + "-ca.key -out " + at +
                                 "-ca.pem -days 2 -subj /CN=" + name + " && openssl req " + curve + " -keyout " + at +
                                 ".key -out " + at + ".csr -subj /CN=" + name + "-rank" + " && openssl x509 -req -in " +
                                 at + ".csr -CA " + at + "-ca.pem -CAkey " + at + "-ca.key -CAcreateserial -out " + at +
                                 ".pem -days 2";
    EXPECT_EQ(system(("(" + commands + ") >/dev/null 2>&1").c_str()), 0) << commands;
    return {at + "-ca.pem", at + ".pem", at + ".key"};
  }
  std::string dir_;
};

// TCP with TLS keyed by `c`. Called before the ranks start too: the bootstrap root's process
// (which forks first) presents the job's certificate to them.
void useTlsWith(const Certificates& c) {
  setenv("WEFT_TRANSPORT", "tcp", 1);
  setenv("WEFT_ENCRYPTION", "tls", 1);
  setenv("WEFT_TIMEOUT", "10", 1);
  setenv("WEFT_TLS_CERT", c.cert.c_str(), 1);
  setenv("WEFT_TLS_KEY", c.key.c_str(), 1);
  setenv("WEFT_TLS_CA", c.ca.c_str(), 1);
}

TEST_F(TlsCertificates, FromTheJobsCaCarryCorrectResults) {
  const Certificates job = issue("job");
  useTlsWith(job);
  auto outcomes = runRankProcesses(
      3,
      [&](int rank, const ncclUniqueId& id) {
        useTlsWith(job);
        ncclComm_t comm = nullptr;
        if (ncclCommInitRank(&comm, 3, id, rank) != ncclSuccess) {
          fprintf(stderr, "rank %d: %s\n", rank, ncclGetLastError(nullptr));
          return 1;
        }
        const int wrong = allReduceChecked(comm, rank, 3);
        ncclCommDestroy(comm);
        return wrong;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// Rank 1 holds a certificate another CA signed: the root refuses its handshake and rank 1's
// error names TLS and the root; rank 0 fails when the root gives up on rank 1 (WEFT_TIMEOUT);
// nobody hangs, nobody gets the table.
TEST_F(TlsCertificates, FromAnotherCaAreRefusedAtTheBootstrap) {
  const Certificates job = issue("job"), other = issue("intruder");
  useTlsWith(job);
  setenv("WEFT_TIMEOUT", "5", 1);
  auto outcomes = runRankProcesses(
      2,
      [&](int rank, const ncclUniqueId& id) {
        if (rank == 1) useTlsWith(other);
        setenv("WEFT_TIMEOUT", "5", 1);
        ncclComm_t comm = nullptr;
        const ncclResult_t result = ncclCommInitRank(&comm, 2, id, rank);
        if (result == ncclSuccess) {
          fprintf(stderr, "rank %d: init succeeded across two CAs\n", rank);
          ncclCommDestroy(comm);
          return 1;
        }
        const std::string message = ncclGetLastError(nullptr);
        if (rank == 1 && (message.find("TLS with the root") == std::string::npos ||
                          message.find("certificate verify failed") == std::string::npos)) {
          fprintf(stderr, "rank 1: '%s' does not say TLS with the root failed verifying it\n", message.c_str());
          return 2;
        }
        return 0;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
}

TEST_F(TlsCertificates, AnIncompleteSetIsAnErrorNamingWhatIsMissing) {
  const Certificates job = issue("job");
  auto outcomes = runRankProcesses(
      2,
      [&](int rank, const ncclUniqueId& id) {
        useTlsWith(job);
        unsetenv("WEFT_TLS_KEY");
        ncclComm_t comm = nullptr;
        const ncclResult_t result = ncclCommInitRank(&comm, 2, id, rank);
        if (result == ncclSuccess) ncclCommDestroy(comm);
        const std::string message = ncclGetLastError(nullptr);
        if (result != ncclInvalidArgument || message.find("missing: WEFT_TLS_KEY") == std::string::npos) {
          fprintf(stderr, "rank %d: %d '%s'\n", rank, result, message.c_str());
          return 1;
        }
        return 0;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
}

// TLS keyed from a secret anyone can compute would protect nothing.
TEST(TlsKey, FromAPublicSecretIsAnError) {
  setenv("NCCL_COMM_ID", "127.0.0.1:29998", 1);
  unsetenv("WEFT_SECRET");
  setenv("WEFT_ENCRYPTION", "tls", 1);
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclInvalidUsage);
  const std::string message = ncclGetLastError(nullptr);
  EXPECT_NE(message.find("WEFT_ENCRYPTION=tls"), std::string::npos) << message;
  EXPECT_NE(message.find("WEFT_SECRET"), std::string::npos) << message;
  setenv("WEFT_SECRET", "00112233445566778899aabbccddeeff", 1);
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  unsetenv("WEFT_ENCRYPTION");
  unsetenv("WEFT_SECRET");
  unsetenv("NCCL_COMM_ID");
}

// Between hosts only TCP encrypts: asking for UCX there with TLS on is an error naming WEFT_NET.
TEST(TlsNet, ATransportThatCannotEncryptIsAnErrorNamingTheVariable) {
  auto outcomes = runRankProcesses(
      2,
      [&](int rank, const ncclUniqueId& id) {
        setenv("WEFT_ENCRYPTION", "tls", 1);
        setenv("WEFT_NET", "ib", 1);
        ncclComm_t comm = nullptr;
        const ncclResult_t result = ncclCommInitRank(&comm, 2, id, rank);
        if (result == ncclSuccess) ncclCommDestroy(comm);
        const std::string message = ncclGetLastError(nullptr);
        // Without verbs built in, WEFT_NET=ib fails as not built, which names the variable too.
        const bool named = message.find("WEFT_NET asks for the ib transport") != std::string::npos &&
                           (message.find("cannot encrypt") != std::string::npos ||
                            message.find("not built with") != std::string::npos);
        if (result != ncclInvalidArgument || !named) {
          fprintf(stderr, "rank %d: %d '%s'\n", rank, result, message.c_str());
          return 1;
        }
        return 0;
      },
      60);
  EXPECT_EQ(describeFailures(outcomes), "");
}

}  // namespace
