#include "tools/characterize/characterize_document.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sstream>

#include "common/json_text.h"
#include "weft/weft.h"

namespace weft::characterize {

std::string isoTimeNow() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[64];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S%z", &local);
  return text;
}

std::string formatCharacterizeDocument(const CharacterizeDocument& doc) {
  std::ostringstream out;
  out << "{\n\"tool\": \"weft-characterize\", \"format\": 1, \"weft_version\": " << jsonQuote(weftVersionString())
      << ",\n\"start_time\": " << jsonQuote(doc.startTime) << ", \"end_time\": " << jsonQuote(isoTimeNow())
      << ", \"elapsed_s\": " << jsonNumber(doc.elapsedSeconds)
      << ",\n\"complete\": " << (doc.complete ? "true" : "false") << ", \"stopped_by\": " << jsonQuote(doc.stoppedBy)
      << ",\n\"args\": [";
  for (size_t i = 0; i < doc.args.size(); ++i) out << (i ? ", " : "") << jsonQuote(doc.args[i]);
  out << "],\n\"options\": " << doc.optionsJson << ",\n\"nranks\": " << doc.nranks << ",\n\"ranks\": " << doc.ranksJson
      << ",\n\"hosts\": " << doc.hostsJson << ",\n\"p2p\": " << doc.p2pJson << ",\n\"sweep\": " << doc.sweepJson
      << ",\n\"selection\": " << doc.selectionJson
      << ",\n\"tuning_file\": " << (doc.tuningFile.empty() ? "null" : jsonQuote(doc.tuningFile)) << ",\n\"skipped\": [";
  for (size_t i = 0; i < doc.skipped.size(); ++i) {
    const std::string& item = doc.skipped[i];
    const size_t colon = item.rfind(": ");
    out << (i ? ",\n  " : "\n  ") << "{\"what\": " << jsonQuote(item.substr(0, colon))
        << ", \"why\": " << jsonQuote(colon == std::string::npos ? "" : item.substr(colon + 2)) << "}";
  }
  out << "]\n}\n";
  return out.str();
}

bool writeCharacterizeDocument(const CharacterizeDocument& doc, const std::string& path, std::string* error) {
  const std::string text = formatCharacterizeDocument(doc);
  const std::string temporary = path + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "w");
  if (!file) {
    *error = "cannot create " + temporary + ": " + std::strerror(errno);
    return false;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  if (std::fclose(file) != 0 || !written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace weft::characterize
