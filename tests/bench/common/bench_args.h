#pragma once
// Argument parsing shared by the benchmarks: --help prints the usage and what
// the bench measures and exits 0; an unknown option, a missing value, a value
// that is not a number or out of its range prints one line naming the argument,
// then the usage, on stderr and exits 2. Never throws.
//
//   memscope::bench::Args args(argc, argv, kUsage, kHelp);
//   while (args.more()) {
//       if (args.option("--events", events, 1, 1'000'000'000)) continue;
//       if (args.flag("--keep")) { keep = true; continue; }
//       if (args.positional(file)) continue;
//       args.unknown();
//   }
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

namespace memscope::bench {

class Args {
public:
    // `usage`: the synopsis ("usage: NAME [--opt N] ..."), one or more lines.
    // `help`: what the bench measures and its targets, printed after the
    // usage by --help.
    Args(int argc, char** argv, const char* usage, const char* help)
        : argc_(argc), argv_(argv), usage_(usage), help_(help) {
        const char* slash = argc > 0 && argv[0] ? std::strrchr(argv[0], '/') : nullptr;
        name_ = slash ? slash + 1 : argc > 0 && argv[0] ? argv[0] : "bench";
    }

    // True while arguments are left; answers --help / -h itself (exit 0).
    bool more() {
        if (i_ >= argc_) return false;
        const std::string_view a = argv_[i_];
        if (a == "--help" || a == "-h") {
            std::fputs(usage_, stdout);
            std::fputs("\n", stdout);
            std::fputs(help_, stdout);
            std::exit(0);
        }
        return true;
    }

    std::string_view current() const { return argv_[i_]; }

    bool flag(std::string_view name) {
        if (current() != name) return false;
        ++i_;
        return true;
    }

    // --name VALUE or --name=VALUE.
    bool option(std::string_view name, std::string& out) {
        const char* v = value(name);
        if (!v) return false;
        out = v;
        return true;
    }

    template <typename Int>
    requires std::numeric_limits<Int>::is_integer bool option(std::string_view name, Int& out,
                                                              Int lo, Int hi) {
        const char* v = value(name);
        if (!v) return false;
        const std::string_view text(v);
        Int parsed{};
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
        if (ec == std::errc::result_out_of_range) outOfRange(name, text, lo, hi);
        if (ec != std::errc() || end != text.data() + text.size() || text.empty())
            fail(std::string(name) + ": '" + std::string(text) + "' is not an integer");
        if (parsed < lo || parsed > hi) outOfRange(name, text, lo, hi);
        out = parsed;
        return true;
    }

    bool option(std::string_view name, double& out, double lo, double hi) {
        const char* v = value(name);
        if (!v) return false;
        errno = 0;
        char* end = nullptr;
        const double parsed = std::strtod(v, &end);
        if (end == v || *end != '\0' || parsed != parsed)
            fail(std::string(name) + ": '" + v + "' is not a number");
        if (errno == ERANGE || parsed < lo || parsed > hi)
            fail(std::string(name) + ": " + v + " is out of range [" + std::to_string(lo) + ", " +
                 std::to_string(hi) + "]");
        out = parsed;
        return true;
    }

    // One of `choices` ("steady|churn").
    bool choice(std::string_view name, std::string& out, std::string_view choices) {
        const char* v = value(name);
        if (!v) return false;
        const std::string_view text(v);
        for (size_t at = 0; at <= choices.size();) {
            size_t bar = choices.find('|', at);
            if (bar == std::string_view::npos) bar = choices.size();
            if (choices.substr(at, bar - at) == text) {
                out = text;
                return true;
            }
            at = bar + 1;
        }
        fail(std::string(name) + ": '" + std::string(text) + "' is not one of " +
             std::string(choices));
    }

    // A word that is not an option (a file, a folder).
    bool positional(std::string& out) {
        const std::string_view a = current();
        if (a.empty() || a[0] == '-') return false;
        out = a;
        ++i_;
        return true;
    }

    // A positional integer (bench-gui's EVENTS); false when it is not one's turn.
    template <typename Int>
    bool positional(const char* what, Int& out, Int lo, Int hi) {
        const std::string_view a = current();
        if (a.empty() || a[0] == '-') return false;
        Int parsed{};
        const auto [end, ec] = std::from_chars(a.data(), a.data() + a.size(), parsed);
        if (ec == std::errc::result_out_of_range) outOfRange(what, a, lo, hi);
        if (ec != std::errc() || end != a.data() + a.size())
            fail(std::string(what) + ": '" + std::string(a) + "' is not an integer");
        if (parsed < lo || parsed > hi) outOfRange(what, a, lo, hi);
        out = parsed;
        ++i_;
        return true;
    }

    [[noreturn]] void unknown() {
        const std::string_view a = current();
        fail(a.empty() || a[0] != '-' ? "unexpected argument '" + std::string(a) + "'"
                                      : "unknown option " + std::string(a));
    }

    // One line naming the problem, the usage, exit 2.
    [[noreturn]] void fail(const std::string& message) const {
        std::fprintf(stderr, "%s: %s\n", name_, message.c_str());
        std::fputs(usage_, stderr);
        std::fputs("\n", stderr);
        std::exit(2);
    }

    const char* name() const { return name_; }

private:
    // The value of --name (consumed), nullptr when the current argument is not --name.
    const char* value(std::string_view name) {
        const std::string_view a = current();
        if (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '=') {
            ++i_;
            return argv_[i_ - 1] + name.size() + 1;
        }
        if (a != name) return nullptr;
        if (i_ + 1 >= argc_) fail(std::string(name) + " needs a value");
        const std::string_view v = argv_[i_ + 1];
        if (v.size() > 1 && v[0] == '-' && v[1] == '-')
            fail(std::string(name) + " needs a value (got " + std::string(v) + ")");
        i_ += 2;
        return argv_[i_ - 1];
    }

    template <typename Int>
    [[noreturn]] void outOfRange(std::string_view name, std::string_view text, Int lo, Int hi) {
        fail(std::string(name) + ": " + std::string(text) + " is out of range [" +
             std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }

    int argc_;
    char** argv_;
    int i_ = 1;
    const char* usage_;
    const char* help_;
    const char* name_;
};

}  // namespace memscope::bench
