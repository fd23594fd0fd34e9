// ncclUniqueId's 128 bytes, as a program hands them over from another rank.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/comm/unique_id.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ncclUniqueId id{};
  std::memcpy(id.internal, data, size < sizeof(id.internal) ? size : sizeof(id.internal));
  weft::UniqueIdContents contents;
  if (weft::decodeUniqueId(id, &contents) == ncclSuccess) (void)contents.root.toString();
  return 0;
}
