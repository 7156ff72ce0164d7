// How many CUDA devices this process can use, asked defensively: a CUDA
// build on a machine without a driver or GPU answers 0 rather than failing.
//
// Thread-safety: safe to call from any thread.
#pragma once

namespace muster::runtime {

// cudaGetDeviceCount, or 0 on any error (no driver, no device, ...).
int VisibleCudaDeviceCount();

}  // namespace muster::runtime
