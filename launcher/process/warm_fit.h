// Whether a worker may come from the warm process (warm_process.h): the
// warm process imported its modules in one environment, and a worker whose
// environment differs in a variable read at import time, or by the
// interpreter at start, would not get what a cold start gives it. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace muster {

// Variables read when the interpreter starts or while modules import, and
// never again: PYTHON* (the interpreter), LD_* (the loader), LANG/LC_*
// (the standard streams' encoding), OpenMP and BLAS thread settings
// (OMP_*, GOMP_*, KMP_*, MKL_*, OPENBLAS_*), TORCH_* and PYTORCH_*.
// CUDA_VISIBLE_DEVICES and NCCL_* are read when CUDA or NCCL initialise,
// which a warm process never has: those may differ per worker.
bool ReadAtImport(std::string_view name);

// Why a worker with environment `worker` ("NAME=value" entries) cannot come
// from a warm process started with `warm`: names the first variable read at
// import time whose value (or absence) differs. nullopt: it can.
std::optional<std::string> WarmEnvironmentMismatch(const std::vector<std::string>& warm,
                                                   const std::vector<std::string>& worker);

}  // namespace muster
