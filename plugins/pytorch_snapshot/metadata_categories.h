#pragma once
// Labels PyTorch or a framework wrote into a snapshot, used before any of
// memscope's rules (they are recorded, not inferred):
//   - an allocation whose `user_metadata` (torch.cuda.memory._set_memory_metadata,
//     a string or, since it takes a dict, compact JSON) names a category;
//   - an `annotate` entry (torch.cuda.memory._annotate_memory) whose metadata
//     names one, for the allocation live at its address then.
// Only a whole name counts ("gradient", "optimizer_state", {"category":
// "parameter"}, the aliases below); free text such as "forward of block 3"
// labels nothing: a category is never guessed from words.

#include <cstdint>
#include <optional>
#include <string_view>

#include "memscope/model/trace.h"

namespace memscope::pytorch_snapshot {

// The category a metadata value names, or nullopt.
std::optional<Category> categoryFromMetadata(std::string_view text);

// Sets the category of each allocation so labelled (where none was set);
// returns how many were.
uint64_t labelFromMetadata(Trace& trace);

}  // namespace memscope::pytorch_snapshot
