// Which workers may come from the warm process: variables read at import
// must match the warm process's environment; the rest may differ.
#include "launcher/process/warm_fit.h"

#include <catch2/catch.hpp>

namespace muster {
namespace {

TEST_CASE("variables read at interpreter start or import are told apart from runtime ones") {
  for (const char* name : {"PYTHONPATH", "PYTHONHASHSEED", "LD_PRELOAD", "LD_LIBRARY_PATH", "LANG",
                           "LC_ALL", "OMP_NUM_THREADS", "GOMP_SPINCOUNT", "KMP_AFFINITY",
                           "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TORCH_SHOW_CPP_STACKTRACES",
                           "PYTORCH_CUDA_ALLOC_CONF", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES"}) {
    INFO(name);
    CHECK(ReadAtImport(name));
  }
  for (const char* name :
       {"RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT", "CUDA_VISIBLE_DEVICES", "NCCL_DEBUG",
        "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_ERROR_FILE", "MUSTER_PROGRESS_FD", "HOME",
        "PATH", "LANGUAGE_X", "XPYTHON", "TORCH_NCCL_DEBUG_INFO_PIPE_FILE"}) {
    INFO(name);
    CHECK_FALSE(ReadAtImport(name));
  }
}

TEST_CASE("a worker fits the warm process unless a variable read at import differs") {
  const std::vector<std::string> warm = {"PATH=/usr/bin", "OMP_NUM_THREADS=1", "LANG=C.UTF-8",
                                         "TORCH_NCCL_ASYNC_ERROR_HANDLING=1"};
  struct Row {
    std::vector<std::string> worker;
    std::optional<std::string> mismatch;
  };
  const std::vector<Row> rows = {
      // Per-rank and runtime variables differ freely.
      {{"PATH=/usr/bin", "OMP_NUM_THREADS=1", "LANG=C.UTF-8", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
        "RANK=3", "CUDA_VISIBLE_DEVICES=3", "MASTER_PORT=29500"},
       std::nullopt},
      {{"PATH=/opt/bin", "OMP_NUM_THREADS=1", "LANG=C.UTF-8", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1"},
       std::nullopt},
      // A different value, a variable added, a variable removed.
      {{"OMP_NUM_THREADS=4", "LANG=C.UTF-8", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1"},
       "OMP_NUM_THREADS is '4' for this worker but was '1' when the warm process imported its "
       "modules (it is read at import)"},
      {{"OMP_NUM_THREADS=1", "LANG=C.UTF-8", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
        "PYTHONPATH=/src"},
       "PYTHONPATH is '/src' for this worker but was unset when the warm process imported its "
       "modules (it is read at import)"},
      {{"OMP_NUM_THREADS=1", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1"},
       "LANG is unset for this worker but was 'C.UTF-8' when the warm process imported its modules "
       "(it is read at import)"},
      // Several differ: the first by name, every time.
      {{"OMP_NUM_THREADS=2", "LANG=C", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1"},
       "LANG is 'C' for this worker but was 'C.UTF-8' when the warm process imported its modules "
       "(it is read at import)"},
      // A value holding '=' is compared whole.
      {{"OMP_NUM_THREADS=1", "LANG=C.UTF-8", "TORCH_NCCL_ASYNC_ERROR_HANDLING=1=x"},
       "TORCH_NCCL_ASYNC_ERROR_HANDLING is '1=x' for this worker but was '1' when the warm process "
       "imported its modules (it is read at import)"},
  };
  for (const Row& row : rows) {
    INFO(row.worker.front());
    CHECK(WarmEnvironmentMismatch(warm, row.worker) == row.mismatch);
  }
}

}  // namespace
}  // namespace muster
