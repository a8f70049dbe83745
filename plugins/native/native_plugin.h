#pragma once
// The native format's importer and exporter (docs/FORMAT.md).

#include <memory>

#include "memscope/open/plugin.h"

namespace memscope {

std::unique_ptr<Importer> makeNativeImporter();
std::unique_ptr<Exporter> makeNativeExporter();

}  // namespace memscope
