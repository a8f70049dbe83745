#pragma once
// What every snapshot the tests write starts with: PROTO, the top-level dict
// with 'segments': [] and 'device_traces': [ with its MARK open, for the
// caller to add the devices' lists, APPENDS them, then SETITEMS and end().

#include "pickle_writer.h"

namespace memscope::test {

inline void beginDeviceTraces(pickle::Writer& w) {
    w.begin();
    w.emptyDict();
    w.mark();
    w.string("segments");
    w.emptyList();
    w.string("device_traces");
    w.emptyList();
    w.mark();
}

}  // namespace memscope::test
