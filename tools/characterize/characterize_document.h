// weft-characterize's JSON document (format 1; docs/characterization.md lists its fields),
// assembled on rank 0 from the sections' JSON text and written whole (to a temporary file,
// then renamed), after every phase, so an interrupted run leaves a valid document.
#pragma once

#include <string>
#include <vector>

namespace weft::characterize {

struct CharacterizeDocument {
  std::string startTime;  // "%Y-%m-%dT%H:%M:%S%z"
  std::vector<std::string> args;
  std::string optionsJson = "{}";
  int nranks = 0;
  double elapsedSeconds = 0;
  bool complete = false;
  std::string stoppedBy;  // "", "interrupt", "budget", or an error
  std::string ranksJson = "[]", hostsJson = "[]", p2pJson = "{}", sweepJson = "[]", selectionJson = "[]";
  std::string tuningFile;            // "" until written
  std::vector<std::string> skipped;  // "what: why"
};

std::string formatCharacterizeDocument(const CharacterizeDocument& doc);
// Returns false with *error set when the file cannot be written.
bool writeCharacterizeDocument(const CharacterizeDocument& doc, const std::string& path, std::string* error);
std::string isoTimeNow();

}  // namespace weft::characterize
