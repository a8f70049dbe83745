#pragma once
// JSON string quoting, shared by every writer of JSON text (the CLI's output,
// metadata values kept as JSON by the importers).

#include <string>
#include <string_view>

namespace memscope {

// Appends s as a quoted JSON string: quotes, backslashes and control
// characters escaped; valid UTF-8 copied as it is, each invalid byte
// replaced by U+FFFD (validUtf8, text_escape.h).
void appendJsonString(std::string& out, std::string_view s);

}  // namespace memscope
