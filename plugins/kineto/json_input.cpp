#include "json_input.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "memscope/base/file_io.h"

namespace memscope::json_input {
namespace {

bool isGzip(const unsigned char* p, size_t n) {
    return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

class FileSource final : public Source {
public:
    FileSource(std::FILE* f, uint64_t size) : f_(f), size_(size) {}
    ~FileSource() override { std::fclose(f_); }
    size_t read(char* buf, size_t cap) override {
        const size_t n = std::fread(buf, 1, cap, f_);
        if (n < cap && std::ferror(f_)) error_ = std::string("read error: ") + std::strerror(errno);
        consumed_ += n;
        return n;
    }
    uint64_t consumed() const override { return consumed_; }
    uint64_t total() const override { return size_; }

private:
    std::FILE* f_;
    uint64_t size_;
    uint64_t consumed_ = 0;
};

class MemorySource final : public Source {
public:
    explicit MemorySource(std::span<const std::byte> b) : b_(b) {}
    size_t read(char* buf, size_t cap) override {
        const size_t n = std::min(cap, b_.size() - pos_);
        if (n) std::memcpy(buf, b_.data() + pos_, n);
        pos_ += n;
        return n;
    }
    uint64_t consumed() const override { return pos_; }
    uint64_t total() const override { return b_.size(); }

private:
    std::span<const std::byte> b_;
    size_t pos_ = 0;
};

// Inflates gzip (several members in a row too, as `cat a.gz b.gz` makes).
class GzipSource final : public Source {
public:
    explicit GzipSource(std::unique_ptr<Source> raw) : raw_(std::move(raw)), in_(256 * 1024) {
        ok_ = inflateInit2(&z_, 15 + 32) == Z_OK;
        if (!ok_) error_ = "cannot start zlib";
    }
    ~GzipSource() override { inflateEnd(&z_); }
    size_t read(char* buf, size_t cap) override {
        if (!ok_ || done_) return 0;
        z_.next_out = reinterpret_cast<Bytef*>(buf);
        z_.avail_out = uInt(cap);
        while (z_.avail_out > 0) {
            if (z_.avail_in == 0) {
                const size_t n = raw_->read(in_.data(), in_.size());
                if (n == 0) {
                    if (!raw_->error().empty())
                        error_ = raw_->error();
                    else if (!member_ended_)
                        error_ = "truncated gzip data";
                    done_ = true;
                    break;
                }
                z_.next_in = reinterpret_cast<Bytef*>(in_.data());
                z_.avail_in = uInt(n);
            }
            member_ended_ = false;
            const int rc = inflate(&z_, Z_NO_FLUSH);
            if (rc == Z_STREAM_END) {
                member_ended_ = true;
                if (inflateReset(&z_) != Z_OK) {
                    error_ = "zlib reset failed";
                    done_ = true;
                    break;
                }
            } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
                error_ = std::string("corrupt gzip data: ") + (z_.msg ? z_.msg : "inflate failed");
                done_ = true;
                break;
            }
        }
        return cap - z_.avail_out;
    }
    uint64_t consumed() const override { return raw_->consumed(); }
    uint64_t total() const override { return raw_->total(); }

private:
    std::unique_ptr<Source> raw_;
    std::vector<char> in_;
    z_stream z_{};
    bool ok_ = false, done_ = false, member_ended_ = false;
};

}  // namespace

Result<std::unique_ptr<Source>> openFile(const std::string& path) {
    // The guarded open: a pipe would block here (and could not be read again
    // after the probe); one swapped in after the probe is refused too.
    auto file = ReadableFile::open(path, "the trace");
    if (!file) return file.error();
    const int fd = file->release();
    std::FILE* f = ::fdopen(fd, "rb");
    if (!f) {
        const int err = errno;
        ::close(fd);
        return makeError("cannot open " + path + ": " + std::strerror(err));
    }
    unsigned char magic[2] = {0, 0};
    const size_t n = std::fread(magic, 1, 2, f);
    std::fseek(f, 0, SEEK_END);
    const long size = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    std::unique_ptr<Source> raw = std::make_unique<FileSource>(f, size > 0 ? uint64_t(size) : 0);
    if (isGzip(magic, n))
        return std::unique_ptr<Source>(std::make_unique<GzipSource>(std::move(raw)));
    return raw;
}

std::unique_ptr<Source> openMemory(std::span<const std::byte> bytes) {
    auto raw = std::make_unique<MemorySource>(bytes);
    if (isGzip(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()))
        return std::make_unique<GzipSource>(std::move(raw));
    return raw;
}

std::string headText(std::span<const std::byte> head, size_t max) {
    auto src = openMemory(head);
    std::string out(max, '\0');
    size_t n = 0;
    while (n < max) {
        const size_t r = src->read(out.data() + n, max - n);
        if (r == 0) break;
        n += r;
    }
    out.resize(n);
    return out;
}

bool parseInt(const char* s, size_t n, int64_t& out) {
    auto r = std::from_chars(s, s + n, out);
    if (r.ec == std::errc() && r.ptr == s + n) return true;
    double d;  // "1.5e9", "12.0": round
    if (!parseDouble(s, n, d) || !(d > -9.2e18 && d < 9.2e18)) return false;
    out = int64_t(d < 0 ? d - 0.5 : d + 0.5);
    return true;
}

bool parseUInt(const char* s, size_t n, uint64_t& out) {
    auto r = std::from_chars(s, s + n, out);
    if (r.ec == std::errc() && r.ptr == s + n) return true;
    int64_t v;
    if (!parseInt(s, n, v)) return false;
    out = uint64_t(v);  // a negative address from a signed writer maps back
    return true;
}

bool parseDouble(const char* s, size_t n, double& out) {
    std::string tmp(s, n);  // from_chars(double) is missing from older libstdc++
    char* end = nullptr;
    errno = 0;
    out = std::strtod(tmp.c_str(), &end);
    return end == tmp.c_str() + tmp.size() && !tmp.empty() && errno == 0;
}

bool microsToNanos(const char* s, size_t n, int64_t& out) {
    const char* dot = static_cast<const char*>(std::memchr(s, '.', n));
    if (!dot || std::memchr(s, 'e', n) || std::memchr(s, 'E', n)) {
        int64_t us;
        if (!parseInt(s, n, us) || __builtin_mul_overflow(us, int64_t(1000), &out)) {
            double d;
            if (!parseDouble(s, n, d) || !(d * 1000.0 > -9.2e18 && d * 1000.0 < 9.2e18))
                return false;
            out = int64_t(d * 1000.0);
        }
        return true;
    }
    int64_t whole = 0;
    if (dot != s && !parseInt(s, size_t(dot - s), whole)) return false;
    const bool negative = n > 0 && s[0] == '-';
    int64_t frac = 0;
    int digits = 0;
    for (const char* p = dot + 1; p < s + n; ++p) {
        if (*p < '0' || *p > '9') return false;
        if (digits < 3) frac = frac * 10 + (*p - '0'), ++digits;
    }
    while (digits < 3) frac *= 10, ++digits;
    if (__builtin_mul_overflow(whole, int64_t(1000), &out)) return false;
    return !__builtin_add_overflow(out, negative ? -frac : frac, &out);
}

}  // namespace memscope::json_input
