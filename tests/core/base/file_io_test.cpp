// file_io: the refusal of pipes and folders, the read-only mapping of a whole
// file, and writes that replace a file only once the new one is complete.
#include "memscope/base/file_io.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "../scratch_dir_test.h"

namespace memscope {
namespace {

namespace fs = std::filesystem;

std::string contentsOf(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// A folder of its own per test, removed at the end.
class FileIoTest : public testutil::ScratchDirTest {
protected:
    // Names in the folder other than `except`: temporaries left behind.
    std::vector<std::string> othersThan(const std::string& except) const {
        std::vector<std::string> out;
        for (const auto& entry : fs::directory_iterator(dir_))
            if (entry.path().filename() != except) out.push_back(entry.path().filename());
        return out;
    }
};

TEST_F(FileIoTest, RequireRegularFileAcceptsAFile) {
    const std::string file = write("trace.json", "{}");
    EXPECT_TRUE(requireRegularFile(file).ok());
    const std::string empty = write("empty", "");
    EXPECT_TRUE(requireRegularFile(empty).ok());
}

TEST_F(FileIoTest, RequireRegularFileRefusesAFifoNamingIt) {
    const std::string fifo = path("pipe");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
    auto r = requireRegularFile(fifo);  // must not block waiting for a writer
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(contains(r.message(), fifo + " is a pipe (FIFO)")) << r.message();
    EXPECT_TRUE(contains(r.message(), "save it to a file first")) << r.message();
}

TEST_F(FileIoTest, RequireRegularFileRefusesAFolderAndADevice) {
    auto folder = requireRegularFile(dir_.string());
    ASSERT_FALSE(folder.ok());
    EXPECT_TRUE(contains(folder.message(), dir_.string() + " is a folder")) << folder.message();
    auto device = requireRegularFile("/dev/null");
    ASSERT_FALSE(device.ok());
    EXPECT_TRUE(contains(device.message(), "/dev/null is a character device")) << device.message();
}

TEST_F(FileIoTest, RequireRegularFileNamesAMissingFile) {
    const std::string missing = path("absent.json");
    auto r = requireRegularFile(missing);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(contains(r.message(), "cannot open " + missing + ": ")) << r.message();
    EXPECT_TRUE(contains(r.message(), std::strerror(ENOENT))) << r.message();
}

TEST_F(FileIoTest, InputFileMapsTheWholeFile) {
    std::string bytes;
    for (int i = 0; i < 3 * 4096 + 123; ++i) bytes += char(i * 7 + (i >> 8));
    const std::string file = write("data.bin", bytes);
    auto f = InputFile::open(file);
    ASSERT_TRUE(f.ok()) << f.message();
    const auto span = (*f)->bytes();
    ASSERT_EQ(span.size(), bytes.size());
    EXPECT_EQ(std::memcmp(span.data(), bytes.data(), bytes.size()), 0);
    EXPECT_FALSE((*f)->shrank());

    auto populated = InputFile::open(file, /*populate=*/true);
    ASSERT_TRUE(populated.ok()) << populated.message();
    ASSERT_EQ((*populated)->bytes().size(), bytes.size());
    EXPECT_EQ(std::memcmp((*populated)->bytes().data(), bytes.data(), bytes.size()), 0);
}

TEST_F(FileIoTest, InputFileDropBeforeKeepsTheBytesReadable) {
    std::string bytes(5 * 4096, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i % 251);
    auto f = InputFile::open(write("data.bin", bytes));
    ASSERT_TRUE(f.ok()) << f.message();
    (*f)->dropBefore(3 * 4096 + 10);
    (*f)->dropBefore(1);                 // before what was dropped: nothing to do
    (*f)->dropBefore(bytes.size() * 2);  // past the end: ignored
    // Dropped pages fault back in from the file.
    EXPECT_EQ(std::memcmp((*f)->bytes().data(), bytes.data(), bytes.size()), 0);
    EXPECT_FALSE((*f)->shrank());
}

TEST_F(FileIoTest, InputFileOfAnEmptyFileHasNoBytes) {
    auto f = InputFile::open(write("empty", ""));
    ASSERT_TRUE(f.ok()) << f.message();
    EXPECT_TRUE((*f)->bytes().empty());
    EXPECT_FALSE((*f)->shrank());
    (*f)->dropBefore(0);
}

TEST_F(FileIoTest, InputFileSeesTheFileGrowButIsNotShrunk) {
    const std::string file = write("growing.bin", "12345678");
    auto f = InputFile::open(file);
    ASSERT_TRUE(f.ok()) << f.message();
    std::ofstream(file, std::ios::binary | std::ios::app) << "more";
    EXPECT_EQ((*f)->bytes().size(), 8u);  // the size when opened
    EXPECT_FALSE((*f)->shrank());
}

TEST_F(FileIoTest, InputFileReportsATruncationWithoutReadingIt) {
    // Checked with stat only; the mapping is not touched past the new end.
    const std::string file = write("cut.bin", std::string(10000, 'x'));
    auto f = InputFile::open(file);
    ASSERT_TRUE(f.ok()) << f.message();
    ASSERT_EQ(::truncate(file.c_str(), 100), 0);
    EXPECT_TRUE((*f)->shrank());
    EXPECT_TRUE(contains((*f)->shrankMessage(), "the file shrank from 10000 to 100 bytes"))
        << (*f)->shrankMessage();
    EXPECT_FALSE(contains((*f)->shrankMessage(), file));  // the caller names the path
}

TEST_F(FileIoTest, InputFileRefusesAFifoAFolderAndAMissingFile) {
    const std::string fifo = path("pipe");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
    auto pipe = InputFile::open(fifo);  // O_NONBLOCK: no waiting for a writer
    ASSERT_FALSE(pipe.ok());
    EXPECT_TRUE(contains(pipe.message(), fifo + " is a pipe (FIFO)")) << pipe.message();

    auto folder = InputFile::open(dir_.string());
    ASSERT_FALSE(folder.ok());
    EXPECT_TRUE(contains(folder.message(), dir_.string() + " is a folder")) << folder.message();

    const std::string missing = path("absent");
    auto absent = InputFile::open(missing);
    ASSERT_FALSE(absent.ok());
    EXPECT_TRUE(contains(absent.message(), "cannot open " + missing)) << absent.message();
}

TEST_F(FileIoTest, ManyInputFilesAtOnceAndOneAfterAnother) {
    // Each open file holds a guard slot until it is closed; closing gives it back.
    const std::string file = write("data.bin", "abc");
    for (int round = 0; round < 3; ++round) {
        std::vector<std::unique_ptr<InputFile>> open;
        for (int i = 0; i < 40; ++i) {
            auto f = InputFile::open(file);
            ASSERT_TRUE(f.ok()) << round << "/" << i << ": " << f.message();
            open.push_back(std::move(*f));
        }
        for (const auto& f : open)
            EXPECT_EQ(std::string(reinterpret_cast<const char*>(f->bytes().data()), 3), "abc");
    }
}

TEST_F(FileIoTest, WriteFileReplacingWritesANewFile) {
    const std::string target = path("out.json");
    std::string given;
    auto r = writeFileReplacing(target, [&](const std::string& tmp) -> Result<void> {
        given = tmp;
        std::ofstream(tmp, std::ios::binary) << "{\"new\": true}";
        return {};
    });
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(contentsOf(target), "{\"new\": true}");
    EXPECT_NE(given, target);  // written through a temporary in the same folder
    EXPECT_EQ(fs::path(given).parent_path(), dir_);
    EXPECT_FALSE(fs::exists(given));
    EXPECT_TRUE(othersThan("out.json").empty());
    // A new file gets the default permissions, not mkstemp's 0600.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    EXPECT_EQ(fs::status(target).permissions(), fs::perms(0666 & ~mask));
}

TEST_F(FileIoTest, WriteFileReplacingKeepsTheOldFileUntilTheNewOneIsComplete) {
    const std::string target = write("out.json", "old contents");
    ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
    auto r = writeFileReplacing(target, [&](const std::string& tmp) -> Result<void> {
        std::ofstream(tmp, std::ios::binary) << "new";
        // While the new file is being written, the old one is whole.
        EXPECT_EQ(contentsOf(target), "old contents");
        return {};
    });
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(contentsOf(target), "new");
    EXPECT_EQ(fs::status(target).permissions(), fs::perms(0640));  // kept
    EXPECT_TRUE(othersThan("out.json").empty());
}

TEST_F(FileIoTest, WriteFileReplacingIsARenameOverTheOldFile) {
    // A reader that opened the old file keeps reading the old bytes.
    const std::string target = write("out.json", "old contents");
    std::ifstream reader(target, std::ios::binary);
    ASSERT_TRUE(reader);
    auto r = writeFileReplacing(target, [&](const std::string& tmp) -> Result<void> {
        std::ofstream(tmp, std::ios::binary) << "new contents, longer than the old";
        return {};
    });
    ASSERT_TRUE(r.ok()) << r.message();
    std::stringstream old;
    old << reader.rdbuf();
    EXPECT_EQ(old.str(), "old contents");
    EXPECT_EQ(contentsOf(target), "new contents, longer than the old");
}

TEST_F(FileIoTest, AFailedWriteLeavesTheOldFileAndNoTemporary) {
    const std::string target = write("out.json", "old contents");
    std::string given;
    auto r = writeFileReplacing(target, [&](const std::string& tmp) -> Result<void> {
        given = tmp;
        std::ofstream(tmp, std::ios::binary) << "half of the ne";
        return makeError("cannot write " + tmp + ": disk full (" + tmp + ")");
    });
    ASSERT_FALSE(r.ok());
    // The user knows the file by its name, not by the temporary's.
    EXPECT_EQ(r.message(), "cannot write " + target + ": disk full (" + target + ")");
    EXPECT_EQ(contentsOf(target), "old contents");
    EXPECT_FALSE(fs::exists(given));
    EXPECT_TRUE(othersThan("out.json").empty());
}

TEST_F(FileIoTest, AFailedFirstWriteLeavesNoFile) {
    const std::string target = path("out.json");
    auto r = writeFileReplacing(target,
                                [](const std::string&) -> Result<void> { return makeError("no"); });
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(), "no");
    EXPECT_FALSE(fs::exists(target));
    EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(FileIoTest, WriteFileReplacingIntoAMissingFolderIsAnError) {
    const std::string target = (dir_ / "absent" / "out.json").string();
    bool called = false;
    auto r = writeFileReplacing(target, [&](const std::string&) -> Result<void> {
        called = true;
        return {};
    });
    ASSERT_FALSE(r.ok());
    EXPECT_FALSE(called);
    EXPECT_TRUE(contains(r.message(), "cannot write " + target)) << r.message();
}

TEST_F(FileIoTest, WriteFileReplacingWhenTheWriterRemovedTheTemporaryIsAnError) {
    const std::string target = write("out.json", "old contents");
    auto r = writeFileReplacing(target, [](const std::string& tmp) -> Result<void> {
        fs::remove(tmp);
        return {};
    });
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(contains(r.message(), "cannot write " + target)) << r.message();
    EXPECT_EQ(contentsOf(target), "old contents");
}

}  // namespace
}  // namespace memscope
