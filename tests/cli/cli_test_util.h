#pragma once
// What the CLI's end-to-end suites share: a run of memscope-cli (exit code,
// stdout, stderr) and a fixture that gives each test its own scratch folder.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace memscope::clitest {

struct CliRun {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// Runs `command` (a shell command line) with stderr sent to `err_path`.
inline CliRun runCommand(const std::string& command, const std::string& err_path) {
    const std::string cmd = command + " 2>" + err_path;
    CliRun r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream e(err_path);
    r.err.assign(std::istreambuf_iterator<char>(e), {});
    return r;
}

// A fresh folder per test, removed afterwards.
class ScratchFolderTest : public ::testing::Test {
protected:
    explicit ScratchFolderTest(const char* prefix) : prefix_(prefix) {}
    void SetUp() override {
        std::string templ =
            (std::filesystem::temp_directory_path() / (std::string(prefix_) + "-XXXXXX")).string();
        ASSERT_NE(mkdtemp(templ.data()), nullptr);
        dir_ = templ;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string file(const std::string& name) const { return (dir_ / name).string(); }

    std::filesystem::path dir_;

private:
    const char* prefix_;
};

}  // namespace memscope::clitest
