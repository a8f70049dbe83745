#pragma once
// A predicted run's provenance: a trace that memscope made from a measured
// one (the what-if simulator, memscope/whatif/policy_simulator.h) rather
// than one a producer recorded. Typed and persisted by the native format
// (chunk 15), so that every view can tell predicted runs from measured ones
// and never mixes the two silently.

#include <string>
#include <vector>

namespace memscope {

struct Prediction {
    std::string source;           // the measured run it was predicted from (its file or name)
    std::string measured_policy;  // that run's checkpoint policy ("full"), "" when not known
    std::string policy;           // the policy predicted ("block", "layers:0,2+opt-in-bwd")
    std::string layers_source;    // where the layers came from: "recorded" or "inferred"
    // Every assumption the prediction made, one sentence each, as a person reads it.
    std::vector<std::string> assumptions;
    friend bool operator==(const Prediction&, const Prediction&) = default;
};

// What a predicted run is called where runs are named: "block (predicted)".
std::string predictedRunName(const Prediction& prediction);

}  // namespace memscope
