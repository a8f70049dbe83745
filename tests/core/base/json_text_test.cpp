// appendJsonString: JSON string quoting for every writer of JSON text.
#include "memscope/base/json_text.h"

#include <gtest/gtest.h>

#include <string>

namespace memscope {
namespace {

std::string jsonQuoted(std::string_view s) {
    std::string out;
    appendJsonString(out, s);
    return out;
}

TEST(JsonText, PlainTextIsQuotedAsItIs) {
    EXPECT_EQ(jsonQuoted(""), "\"\"");
    EXPECT_EQ(jsonQuoted("step 2 / backward"), "\"step 2 / backward\"");
    EXPECT_EQ(jsonQuoted("a'b{}[]:,~\x7f"), "\"a'b{}[]:,~\x7f\"");  // DEL is no control here
}

TEST(JsonText, AppendsToWhatIsThere) {
    std::string out = "{\"name\": ";
    appendJsonString(out, "x");
    out += ", \"file\": ";
    appendJsonString(out, "y");
    EXPECT_EQ(out, "{\"name\": \"x\", \"file\": \"y\"");
}

TEST(JsonText, QuotesAndBackslashesAreEscaped) {
    EXPECT_EQ(jsonQuoted("say \"hi\""), R"("say \"hi\"")");
    EXPECT_EQ(jsonQuoted("C:\\temp\\x"), R"("C:\\temp\\x")");
    EXPECT_EQ(jsonQuoted("\\\""), R"("\\\"")");
    EXPECT_EQ(jsonQuoted("/"), "\"/\"");  // a slash needs no escape
}

TEST(JsonText, CommonControlCharactersGetShortEscapes) {
    EXPECT_EQ(jsonQuoted("a\nb\tc\rd"), R"("a\nb\tc\rd")");
}

TEST(JsonText, OtherControlCharactersGetUnicodeEscapes) {
    EXPECT_EQ(jsonQuoted(std::string_view("\0", 1)), R"("\u0000")");
    EXPECT_EQ(jsonQuoted("\x01\x08\x0b\x0c\x1b\x1f"), R"("\u0001\u0008\u000b\u000c\u001b\u001f")");
    EXPECT_EQ(jsonQuoted(std::string_view("a\0b", 3)), R"("a\u0000b")");  // not cut at the NUL
    EXPECT_EQ(jsonQuoted("\x20"), "\" \"");                               // 0x20 is not a control
}

TEST(JsonText, Utf8BytesArePassedThrough) {
    const std::string text =
        "gr\xc3\xb6\xc3\x9f"
        "e \xe2\x86\x92 \xf0\x9f\x94\xa5";  // größe → 🔥
    EXPECT_EQ(jsonQuoted(text), "\"" + text + "\"");
    // Bytes that are not valid UTF-8 are U+FFFD each: strict parsers refuse
    // them raw (issue 64, class 7).
    EXPECT_EQ(jsonQuoted("\xff\xfe\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

TEST(JsonText, EveryByteGivesTheExpectedText) {
    for (int b = 0; b < 256; ++b) {
        const char c = char(b);
        const std::string out = jsonQuoted(std::string_view(&c, 1));
        SCOPED_TRACE(b);
        ASSERT_GE(out.size(), 3u);
        EXPECT_EQ(out.front(), '"');
        EXPECT_EQ(out.back(), '"');
        const std::string body = out.substr(1, out.size() - 2);
        if (c == '"' || c == '\\') {
            EXPECT_EQ(body, std::string("\\") + c);
        } else if (b < 0x20) {
            EXPECT_EQ(body[0], '\\');
            EXPECT_TRUE(body.size() == 2 || body.size() == 6) << body;
        } else if (b >= 0x80) {
            EXPECT_EQ(body, "\xEF\xBF\xBD");  // a lone byte of a sequence: not UTF-8
        } else {
            EXPECT_EQ(body, std::string(1, c));
        }
    }
}

}  // namespace
}  // namespace memscope
