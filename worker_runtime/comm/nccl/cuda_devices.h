// How many CUDA devices this process can use, asked defensively: a CUDA
// build on a machine without a driver or GPU answers 0 rather than failing.
//
// Thread-safety: safe to call from any thread.
#pragma once

namespace muster::runtime {

// cudaGetDeviceCount, or 0 on any error (no driver, no device, ...).
int VisibleCudaDeviceCount();

// The device a process uses unless told otherwise: device 0 when exactly one
// is visible (the launcher gave each worker its own GPU through
// CUDA_VISIBLE_DEVICES), else its local rank. NcclCommunicator picks it, and
// so does what allocates the buffers it reduces.
int DefaultCudaDevice(int local_rank);

}  // namespace muster::runtime
