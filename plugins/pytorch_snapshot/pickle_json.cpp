#include "pickle_json.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "memscope/base/json_text.h"

namespace memscope::pytorch_snapshot {

using pickle::Container;
using pickle::Kind;
using pickle::Machine;
using pickle::Tag;
using pickle::Value;

namespace {

void renderInto(Machine& m, const Value& v, int depth, std::string& out, size_t max_text) {
    if (out.size() > max_text) return;
    char buf[40];
    switch (v.tag) {
        case Tag::None:
        case Tag::Dead:
        case Tag::Unset:
        case Tag::Entry:
        case Tag::Pending:
            out += "null";
            return;
        case Tag::Bool:
            out += v.bits ? "true" : "false";
            return;
        case Tag::Int:
            std::snprintf(buf, sizeof buf, "%" PRId64, v.asI64());
            out += buf;
            return;
        case Tag::UInt:
            std::snprintf(buf, sizeof buf, "%" PRIu64, v.asU64());
            out += buf;
            return;
        case Tag::Float: {
            std::snprintf(buf, sizeof buf, "%.17g", v.asDouble());
            out += buf;
            // Keep it a float when read back ("0" would come back as an int).
            if (!std::strpbrk(buf, ".eEn")) out += ".0";
            return;
        }
        case Tag::Str:
        case Tag::Bytes:
            appendJsonString(out, m.str(v).substr(0, max_text - std::min(max_text, out.size())));
            return;
        case Tag::Frame:
        case Tag::Stack:
            out += "null";
            return;
        case Tag::Ref:
            break;
    }
    Container* c = m.deref(v);
    if (!c || depth <= 0) {
        out += "null";
        return;
    }
    if (c->kind == Kind::Dict) {
        out += '{';
        for (size_t i = 0; i + 1 < c->items.size(); i += 2) {
            if (i) out += ',';
            const Value& k = c->items[i];
            if (k.tag == Tag::Str || k.tag == Tag::Bytes)
                appendJsonString(out, m.str(k));
            else {
                std::string key;
                renderInto(m, k, depth - 1, key, max_text);
                appendJsonString(out, key);
            }
            out += ':';
            renderInto(m, c->items[i + 1], depth - 1, out, max_text);
        }
        out += '}';
    } else {
        out += '[';
        for (size_t i = 0; i < c->items.size(); ++i) {
            if (i) out += ',';
            renderInto(m, c->items[i], depth - 1, out, max_text);
        }
        out += ']';
    }
}

}  // namespace

std::string renderJson(Machine& m, const Value& v, int depth, size_t max_text) {
    std::string out;
    renderInto(m, v, depth, out, max_text);
    return out;
}

}  // namespace memscope::pytorch_snapshot
