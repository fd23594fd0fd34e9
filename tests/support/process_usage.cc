#include "tests/support/process_usage.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

namespace weft::testing {
namespace {

int entriesOf(const char* directory) {
  int n = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    (void)entry;
    ++n;
  }
  return n;
}

int64_t statusFieldKiB(const char* field) {
  FILE* file = fopen("/proc/self/status", "re");
  if (file == nullptr) return -1;
  int64_t value = -1;
  char line[256];
  const size_t length = strlen(field);
  while (fgets(line, sizeof(line), file) != nullptr) {
    if (strncmp(line, field, length) == 0 && line[length] == ':') {
      long long kib = 0;
      if (sscanf(line + length + 1, "%lld", &kib) == 1) value = kib;
      break;
    }
  }
  fclose(file);
  return value;
}

}  // namespace

int threadsInThisProcess() { return entriesOf("/proc/self/task"); }

void startThreadRuntime() {
  std::thread([] {}).join();
}

// directory_iterator holds one descriptor open on /proc/self/fd while it lists it.
int openFileDescriptors() { return entriesOf("/proc/self/fd") - 1; }

int64_t residentKiB() { return statusFieldKiB("VmRSS"); }

int64_t addressSpaceKiB() { return statusFieldKiB("VmSize"); }

int memoryMappings() {
  FILE* file = fopen("/proc/self/maps", "re");
  if (file == nullptr) return -1;
  int lines = 0;
  for (int c; (c = fgetc(file)) != EOF;) lines += c == '\n' ? 1 : 0;
  fclose(file);
  return lines;
}

}  // namespace weft::testing
