// common/cpu_features.h: one detector serves the reduction kernels, the compression codecs and
// the streaming copy; without a cap each picks what it picked when it detected features itself.
#include "common/cpu_features.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "common/reduce.h"
#include "compression/cpu/simd.h"

namespace weft {
namespace {

#if defined(__x86_64__) || defined(__i386__)
#define WEFT_TEST_X86 1
#else
#define WEFT_TEST_X86 0
#endif

// __builtin_cpu_supports takes only a string literal, hence a macro.
#if WEFT_TEST_X86
#define has(feature) (__builtin_cpu_init(), __builtin_cpu_supports(feature) != 0)
#else
#define has(feature) false
#endif

TEST(CpuFeatures, ReductionKernelChoiceMatchesTheOldDetector) {
  bool avx2 = has("avx2") && has("fma") && has("f16c") && has("bmi") && has("bmi2");
  bool avx512 = avx2 && has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq");
  KernelIsa expected = avx512 ? KernelIsa::Avx512 : avx2 ? KernelIsa::Avx2 : KernelIsa::Portable;
  if (getenv("WEFT_KERNEL_ISA") || getenv("WEFT_COMPRESSION_ISA")) GTEST_SKIP() << "a cap is set";
  EXPECT_EQ(kernelIsa(), expected);
  EXPECT_TRUE(kernelIsaSupported(expected));
}

TEST(CpuFeatures, CompressionChoiceMatchesTheOldDetector) {
  using compression::Isa;
  Isa expected = Isa::kPortable;
  if (has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq") && has("bmi2"))
    expected = Isa::kAvx512;
  else if (has("avx2") && has("bmi2"))
    expected = Isa::kAvx2;
  EXPECT_EQ(compression::detectedIsa(), expected);
  if (getenv("WEFT_KERNEL_ISA") || getenv("WEFT_COMPRESSION_ISA")) GTEST_SKIP() << "a cap is set";
  EXPECT_EQ(compression::activeIsa(), expected);
}

TEST(CpuFeatures, DetectedMatchesTheProcessor) {
  const CpuFeatures& f = detectedCpuFeatures();
  EXPECT_EQ(f.avx2, has("avx2"));
  EXPECT_EQ(f.bmi2, has("bmi2"));
  EXPECT_EQ(f.avx512f, has("avx512f"));
  EXPECT_EQ(f.avx512bw, has("avx512bw"));
}

TEST(CpuFeatures, CapsRemoveWhatTheyExclude) {
  CpuFeatures all;
  all.avx2 = all.fma = all.f16c = all.bmi = all.bmi2 = true;
  all.avx512f = all.avx512bw = all.avx512vl = all.avx512dq = true;
  CpuFeatures portable = capCpuFeatures(all, "portable");
  EXPECT_FALSE(portable.avx2 || portable.fma || portable.f16c || portable.bmi || portable.bmi2 || portable.avx512f ||
               portable.avx512bw || portable.avx512vl || portable.avx512dq);
  CpuFeatures avx2 = capCpuFeatures(all, "avx2");
  EXPECT_TRUE(avx2.avx2 && avx2.fma && avx2.f16c && avx2.bmi && avx2.bmi2);
  EXPECT_FALSE(avx2.avx512f || avx2.avx512bw || avx2.avx512vl || avx2.avx512dq);
  CpuFeatures avx512 = capCpuFeatures(all, "avx512");
  EXPECT_TRUE(avx512.avx2 && avx512.avx512f && avx512.avx512dq);
  CpuFeatures none = capCpuFeatures(all, nullptr);
  EXPECT_TRUE(none.avx512vl);
}

// Runs in a child process started by the test below, with the deprecated alias set: the cap
// is read once per process, so it needs a fresh one.
TEST(CpuFeaturesChild, DeprecatedAliasCapsEveryKernel) {
  const char* cap = getenv("WEFT_COMPRESSION_ISA");
  if (!cap || std::string(cap) != "portable" || getenv("WEFT_KERNEL_ISA")) GTEST_SKIP() << "run by the test below";
  const CpuFeatures& usable = usableCpuFeatures();
  EXPECT_FALSE(usable.avx2 || usable.bmi2 || usable.avx512f);
  EXPECT_EQ(kernelIsa(), KernelIsa::Portable);
  EXPECT_EQ(compression::activeIsa(), compression::Isa::kPortable);
}

TEST(CpuFeatures, CompressionIsaIsADeprecatedAliasOfKernelIsa) {
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  std::string command = "env -u WEFT_KERNEL_ISA WEFT_COMPRESSION_ISA=portable '" + std::string(self) +
                        "' --gtest_filter=CpuFeaturesChild.* > /dev/null";
  int status = system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace weft
