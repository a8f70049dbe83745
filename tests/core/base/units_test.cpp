// Byte sizes in and out, and nanoseconds to microseconds.
#include "memscope/base/units.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace memscope {
namespace {

TEST(Units, FormatBytesThreeSignificantDigits) {
    EXPECT_EQ(formatBytes(0), "0 B");
    EXPECT_EQ(formatBytes(1023), "1023 B");
    EXPECT_EQ(formatBytes(1024), "1.00 KiB");
    EXPECT_EQ(formatBytes(1536), "1.50 KiB");
    EXPECT_EQ(formatBytes(10 * 1024 * 1024 + 512 * 1024), "10.5 MiB");
    EXPECT_EQ(formatBytes(int64_t(640) << 20), "640 MiB");
    EXPECT_EQ(formatBytes(-(int64_t(3) << 29)), "-1.50 GiB");
    EXPECT_EQ(formatBytes((int64_t(1) << 20) - 1), "1.00 MiB");  // 1023.999 KiB rounds up a unit
    EXPECT_EQ(formatBytes(INT64_MIN), "-8192 PiB");
    EXPECT_EQ(formatBytes(INT64_MIN).front(), '-');  // no overflow on the most negative value
}

TEST(Units, FormatSignedBytesMarksGrowth) {
    EXPECT_EQ(formatSignedBytes(1536), "+1.50 KiB");
    EXPECT_EQ(formatSignedBytes(-1536), "-1.50 KiB");
    EXPECT_EQ(formatSignedBytes(0), "0 B");
    EXPECT_EQ(formatSignedBytes(INT64_MIN), formatBytes(INT64_MIN));
}

TEST(Units, NanosToMicrosRoundsAndNeverOverflows) {
    EXPECT_EQ(nanosToMicrosFloor(1999), 1);
    EXPECT_EQ(nanosToMicrosCeil(1001), 2);
    EXPECT_EQ(nanosToMicrosFloor(-1), -1);
    EXPECT_EQ(nanosToMicrosCeil(-1), 0);
    EXPECT_EQ(nanosToMicrosFloor(-1000), -1);
    EXPECT_EQ(nanosToMicrosFloor(INT64_MIN), INT64_MIN / 1000 - 1);  // sign kept at the end
    EXPECT_EQ(nanosToMicrosCeil(INT64_MIN), INT64_MIN / 1000);
    EXPECT_EQ(nanosToMicrosFloor(INT64_MAX), INT64_MAX / 1000);
    EXPECT_EQ(nanosToMicrosCeil(INT64_MAX), INT64_MAX / 1000 + 1);
}

TEST(Units, ParseByteSize) {
    EXPECT_EQ(parseByteSize("1048576").value(), 1048576);
    EXPECT_EQ(parseByteSize("7.5GiB").value(), int64_t(7.5 * 1073741824.0));
    EXPECT_EQ(parseByteSize("800MB").value(), 800'000'000);
    EXPECT_EQ(parseByteSize("800 mb").value(), 800'000'000);
    EXPECT_EQ(parseByteSize("2g").value(), int64_t(2) << 30);
    EXPECT_EQ(parseByteSize("512KiB").value(), 512 * 1024);
    EXPECT_EQ(parseByteSize("  64 B ").value(), 64);
    for (const char* bad :
         {"", "GiB", "-5", "1.2.3GB", "12 parsecs", "99999999999999999999", "1e30GB"}) {
        auto r = parseByteSize(bad);
        EXPECT_FALSE(r.ok()) << bad;
        if (!r.ok()) {
            EXPECT_NE(r.message().find("not a size"), std::string::npos) << r.message();
        }
    }
}

}  // namespace
}  // namespace memscope
