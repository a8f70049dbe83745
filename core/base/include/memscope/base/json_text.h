#pragma once
// JSON string quoting, shared by every writer of JSON text (the CLI's output,
// metadata values kept as JSON by the importers).

#include <string>
#include <string_view>
#include <vector>

namespace memscope {

// Appends s as a quoted JSON string: quotes, backslashes and control
// characters escaped; valid UTF-8 copied as it is, each invalid byte
// replaced by U+FFFD (validUtf8, text_escape.h).
void appendJsonString(std::string& out, std::string_view s);

// `items` as a JSON list of strings (a command line's arguments, kept
// exactly), cut at whole items so that it stays within `max_bytes`.
std::string jsonStringList(const std::vector<std::string>& items,
                           size_t max_bytes = static_cast<size_t>(-1));

}  // namespace memscope
