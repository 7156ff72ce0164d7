// The shared secret of --token-file, read the same way by musterd and muster:
// the file's content without trailing whitespace. An unreadable or empty file
// is an error that names the path.
#pragma once

#include <string>

#include "common/status.h"

namespace muster::rdzv {

Result<std::string> ReadTokenFile(const std::string& path);

}  // namespace muster::rdzv
