#include "memscope/model/op_scopes.h"

#include <algorithm>
#include <array>

namespace memscope {

std::string_view toString(OpSource source) {
    switch (source) {
        case OpSource::None:
            return "none";
        case OpSource::Recorded:
            return "recorded";
        case OpSource::Inferred:
            return "inferred";
    }
    return "none";
}

bool isAllocationHelperOp(std::string_view name) {
    static constexpr std::array<std::string_view, 8> kHelpers = {"aten::empty",
                                                                 "aten::empty_strided",
                                                                 "aten::empty_like",
                                                                 "aten::new_empty",
                                                                 "aten::new_empty_strided",
                                                                 "aten::resize_",
                                                                 "aten::empty.memory_format",
                                                                 "aten::set_"};
    return std::find(kHelpers.begin(), kHelpers.end(), name) != kHelpers.end();
}

}  // namespace memscope
