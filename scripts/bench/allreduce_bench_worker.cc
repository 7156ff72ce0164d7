// One rank of the allreduce benchmark (allreduce.sh): times the runtime's
// float32 sum allreduce through CreateCommunicator, as a training process
// would call it.
//
// Usage: allreduce_bench_worker BACKEND SIZES_BYTES WARMUPS ITERS
//   BACKEND      gloo | auto (host memory: NCCL is refused)
//   SIZES_BYTES  comma-separated message sizes in bytes
//   WARMUPS      comma-separated warm-up calls per size (as many as sizes)
//   ITERS        comma-separated timed calls per size (as many as sizes)
// allreduce_bench.py passes the same counts to allreduce_torch_worker.py.
// Env: torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (the store).
// For each size: warm-up calls, then timed calls, each started after a
// barrier; rank 0 prints "size=BYTES median_s=S min_s=S iters=N".
// Exit 0, or 1 on any error (message on stderr).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/store/store_client.h"

namespace {

using muster::runtime::DataType;
using muster::runtime::ReduceOp;

std::vector<size_t> ParseList(const std::string& text) {
  std::vector<size_t> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) values.push_back(std::stoull(item));
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: allreduce_bench_worker BACKEND SIZES_BYTES WARMUPS ITERS\n";
    return 1;
  }
  const std::vector<size_t> sizes = ParseList(argv[2]);
  const std::vector<size_t> warmups = ParseList(argv[3]);
  const std::vector<size_t> iters = ParseList(argv[4]);
  if (warmups.size() != sizes.size() || iters.size() != sizes.size()) {
    std::cerr << "allreduce_bench_worker: " << sizes.size() << " sizes but " << warmups.size()
              << " warm-up counts and " << iters.size() << " iteration counts\n";
    return 1;
  }
  if (std::find(iters.begin(), iters.end(), size_t{0}) != iters.end()) {
    std::cerr << "allreduce_bench_worker: every iteration count must be positive\n";
    return 1;
  }
  auto backend = muster::runtime::ParseBackend(argv[1]);
  auto ctx = muster::runtime::Context::FromProcessEnv();
  if (!backend.ok() || !ctx.ok()) {
    std::cerr << (backend.ok() ? ctx.status() : backend.status()).message() << std::endl;
    return 1;
  }
  auto store = muster::runtime::StoreClient::Connect(
      {.host = ctx->master_addr, .port = ctx->master_port, .prefix = ctx->StoreNamespace()});
  if (!store.ok()) {
    std::cerr << "store: " << store.status().message() << std::endl;
    return 1;
  }
  if (*backend == muster::runtime::Backend::kNccl) {
    std::cerr << "allreduce_bench_worker: buffers are host memory; --backend nccl is not built\n";
    return 1;
  }
  auto comm = muster::runtime::CreateCommunicator(
      *ctx, store->get(),
      {.backend = muster::runtime::Backend::kGloo, .timeout = std::chrono::seconds(120)});
  if (!comm.ok()) {
    std::cerr << "comm: " << comm.status().message() << std::endl;
    return 1;
  }
  try {
    for (size_t k = 0; k < sizes.size(); ++k) {
      const size_t bytes = sizes[k];
      std::vector<float> data(bytes / sizeof(float), 1.0f);
      for (size_t i = 0; i < warmups[k]; ++i) {
        (*comm)->AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
      }
      std::vector<double> seconds;
      seconds.reserve(iters[k]);
      for (size_t i = 0; i < iters[k]; ++i) {
        (*comm)->Barrier();
        const auto start = std::chrono::steady_clock::now();
        (*comm)->AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
        seconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      std::sort(seconds.begin(), seconds.end());
      if (ctx->rank == 0) {
        std::cout << "size=" << bytes << " median_s=" << seconds[seconds.size() / 2]
                  << " min_s=" << seconds.front() << " iters=" << seconds.size() << std::endl;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "rank " << ctx->rank << ": " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
