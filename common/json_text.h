// Pieces of JSON text that every parser accepts: quoted strings and numbers. Header-only, so
// that tools built without the library (perf/'s pure core) use the same rules.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

namespace weft {

// Length of the valid UTF-8 sequence at s[i], or 0 when the byte there does not start one.
inline size_t utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
  if (length == 0 || i + length > s.size()) return 0;
  for (size_t k = 1; k < length; ++k)
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  if (length == 2 && lead < 0xc2) return 0;                          // overlong
  if (length == 3 && lead == 0xe0 && byte(i + 1) < 0xa0) return 0;   // overlong
  if (length == 3 && lead == 0xed && byte(i + 1) >= 0xa0) return 0;  // a surrogate
  if (length == 4 && (lead > 0xf4 || (lead == 0xf0 && byte(i + 1) < 0x90) || (lead == 0xf4 && byte(i + 1) >= 0x90)))
    return 0;
  return length;
}

// `text` as a JSON string literal, quotes included. Control characters are escaped, and a
// byte that is not part of valid UTF-8 becomes U+FFFD: JSON text must be UTF-8, and a path or
// an environment value may hold any byte.
inline std::string jsonQuote(std::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    size_t length = utf8SequenceLength(text, i);
    if (length == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (length > 1) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
    ++i;
  }
  return out + "\"";
}

// `value` printed with `format` (a printf format for one double), or the quoted string "nan",
// "inf" or "-inf" where JSON has no number (nccl-tests writes NaN as "nan" too).
inline std::string jsonNumber(double value, const char* format = "%.6g") {
  if (std::isnan(value)) return "\"nan\"";
  if (std::isinf(value)) return value > 0 ? "\"inf\"" : "\"-inf\"";
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace weft
