// One rank of the allreduce benchmark (allreduce.sh): times the runtime's
// float32 sum allreduce through CreateCommunicator, as a training process
// would call it.
//
// Usage: allreduce_bench_worker BACKEND SIZES_BYTES
//   BACKEND      gloo | auto | nccl
//   SIZES_BYTES  comma-separated message sizes in bytes
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

// Fewer repetitions for big messages keep the whole run within minutes.
int WarmupsFor(size_t bytes) { return bytes >= (64u << 20) ? 1 : bytes >= (1u << 20) ? 2 : 5; }
int ItersFor(size_t bytes) { return bytes >= (64u << 20) ? 3 : bytes >= (1u << 20) ? 5 : 20; }

std::vector<size_t> ParseSizes(const std::string& text) {
  std::vector<size_t> sizes;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) sizes.push_back(std::stoull(item));
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: allreduce_bench_worker BACKEND SIZES_BYTES\n";
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
  auto comm = muster::runtime::CreateCommunicator(
      *ctx, **store, {.backend = *backend, .timeout = std::chrono::seconds(120)});
  if (!comm.ok()) {
    std::cerr << "comm: " << comm.status().message() << std::endl;
    return 1;
  }
  try {
    for (size_t bytes : ParseSizes(argv[2])) {
      std::vector<float> data(bytes / sizeof(float), 1.0f);
      for (int i = 0; i < WarmupsFor(bytes); ++i) {
        (*comm)->AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
      }
      std::vector<double> seconds;
      for (int i = 0; i < ItersFor(bytes); ++i) {
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
