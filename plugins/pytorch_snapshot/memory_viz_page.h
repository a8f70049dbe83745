#pragma once
// Finds the snapshot inside a MemoryViz HTML page: what
// torch.cuda._memory_viz.trace_plot / segment_plot / profile_plot write
// (torch 2.1 and later; the template has not changed since):
//
//   <!DOCTYPE html> ... <script type="module">
//   import {add_local_files} from "https://cdn.jsdelivr.net/.../MemoryViz.js"
//   const local_files = [{"name": "snapshot.pickle", "base64": "gASV..."}]
//   add_local_files(local_files, 'Active Memory Timeline')
//   </script>
//
// The payload is the pickle, padded with 1 to 3 zero bytes to a multiple of 3
// (the unpickler stops at STOP, so the padding is never read). Only text is
// searched here: nothing in the page is run, and the page is never parsed as
// HTML, so markup around the script (a page saved again from a browser) does
// not matter. torch 2.0's trace_plot wrote a different page that holds the
// plot's drawing data, not the snapshot; it is recognised to say so.

#include <cstddef>
#include <span>
#include <string>

#include "memscope/base/result.h"

namespace memscope::pytorch_snapshot {

// From the first bytes of a file: markup that starts like an HTML page (after
// a byte-order mark, whitespace and comments).
bool looksLikeHtml(std::span<const std::byte> head);
// From the first bytes: the page imports MemoryViz.js or calls add_local_files.
bool mentionsMemoryViz(std::span<const std::byte> head);

struct PagePayload {
    size_t begin = 0;  // the base64 text is page[begin, end)
    size_t end = 0;
    bool more_files = false;  // local_files lists further files after this one
    std::string file_name;    // its "name" ("snapshot.pickle"), when given
    std::string view;         // add_local_files' second argument, when found
};

// The first embedded file of a page, or an error saying why there is none.
Result<PagePayload> findPayload(std::span<const std::byte> page);

}  // namespace memscope::pytorch_snapshot
