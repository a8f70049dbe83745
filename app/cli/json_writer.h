#pragma once
// A minimal streaming JSON writer: the CLI's output has a fixed shape, so a
// library DOM would only add a copy of the data.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memscope::cli {

class JsonWriter {
public:
    JsonWriter& beginObject();
    JsonWriter& endObject();
    JsonWriter& beginArray();
    JsonWriter& endArray();
    JsonWriter& key(std::string_view k);
    JsonWriter& value(std::string_view s);
    JsonWriter& value(int64_t v);
    JsonWriter& value(uint64_t v);
    JsonWriter& null();
    template <typename T>
    JsonWriter& value(const std::optional<T>& v) {
        return v ? value(*v) : null();
    }
    const std::string& str() const { return out_; }

private:
    void separate();
    void writeString(std::string_view s);
    void indent();
    std::string out_;
    std::vector<bool> first_;  // per open container: no element written yet
    bool after_key_ = false;
};

}  // namespace memscope::cli
