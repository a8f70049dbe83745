#include "memscope/model/prediction.h"

namespace memscope {

std::string predictedRunName(const Prediction& prediction) {
    return (prediction.policy.empty() ? std::string("run") : prediction.policy) + " (predicted)";
}

}  // namespace memscope
