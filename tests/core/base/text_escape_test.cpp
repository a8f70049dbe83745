// terminalText and validUtf8 (issue 64, class 7): strings from a file shown
// on a terminal or written as JSON never carry a control sequence or bytes
// that are not UTF-8.
#include "memscope/base/text_escape.h"

#include <gtest/gtest.h>

#include "memscope/base/json_text.h"

namespace memscope {
namespace {

TEST(TerminalText, PlainTextAndUtf8AreKept) {
    EXPECT_EQ(terminalText("model.layers.3.attn"), "model.layers.3.attn");
    EXPECT_EQ(terminalText("caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x94\xA5"),
              "caf\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x94\xA5");
}

TEST(TerminalText, ControlSequencesAreMadeVisible) {
    EXPECT_EQ(terminalText("a\x1b]0;pwned\x07z"), "a\\x1b]0;pwned\\x07z");
    EXPECT_EQ(terminalText("\x1b[2J"), "\\x1b[2J");
    EXPECT_EQ(terminalText("x\nrank 9 peaks at 0 B"), "x\\x0arank 9 peaks at 0 B");
    EXPECT_EQ(terminalText("a\rb\tc\x7f"), "a\\x0db\\x09c\\x7f");
    EXPECT_EQ(terminalText(std::string_view("a\0b", 3)), "a\\x00b");
    // C1 controls (CSI is U+009B) and a right-to-left override.
    EXPECT_EQ(terminalText("\xC2\x9B"
                           "2J"),
              "\\u009b2J");
    EXPECT_EQ(terminalText("\xE2\x80\xAE"
                           "txt"),
              "\\u202etxt");
}

TEST(TerminalText, KeepLinesKeepsALaidOutReport) {
    EXPECT_EQ(terminalText("a\n\tb\x1b[2J\r\n", TextLines::Keep), "a\n\tb\\x1b[2J\\x0d\n");
}

TEST(TerminalText, InvalidUtf8IsReplaced) {
    EXPECT_EQ(terminalText("a\xFFz"), "a\xEF\xBF\xBDz");
    EXPECT_EQ(terminalText("\xC3"), "\xEF\xBF\xBD");                  // cut short
    EXPECT_EQ(terminalText("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
    EXPECT_EQ(terminalText("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
    // A raw C1 byte is no UTF-8 either: never a lone 0x9B for a terminal.
    EXPECT_EQ(terminalText("\x9B"
                           "2J"),
              "\xEF\xBF\xBD"
              "2J");
}

TEST(ValidUtf8, ReplacesOnlyWhatIsInvalid) {
    EXPECT_TRUE(isValidUtf8("caf\xC3\xA9"));
    EXPECT_FALSE(isValidUtf8("caf\xE9"));
    EXPECT_FALSE(isValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
    EXPECT_EQ(validUtf8("caf\xE9!"), "caf\xEF\xBF\xBD!");
    EXPECT_EQ(validUtf8("ok\x1b"), "ok\x1b");  // controls are JSON's to escape
}

TEST(ValidUtf8, JsonStringsAreAlwaysValidUtf8WithControlsEscaped) {
    std::string out;
    appendJsonString(out, "a\x1b]0;t\x07\xFF");
    EXPECT_EQ(out, "\"a\\u001b]0;t\\u0007\xEF\xBF\xBD\"");
    EXPECT_TRUE(isValidUtf8(out));
}

}  // namespace
}  // namespace memscope
