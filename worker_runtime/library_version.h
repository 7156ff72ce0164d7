// The version of the libmuster_runtime a program is running against: the
// shared library's, which can differ from the headers' muster::kVersion
// (common/version.h) the program was compiled with.
#pragma once

namespace muster::runtime {

// "MAJOR.MINOR.PATCH", the project version the library was built at.
const char* LibraryVersion();

}  // namespace muster::runtime
