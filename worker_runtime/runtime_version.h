// The version of libmuster_runtime a program was linked with.
#pragma once

namespace muster::runtime {

const char* RuntimeVersion();

}  // namespace muster::runtime
