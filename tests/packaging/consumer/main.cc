// The consumer of the installed runtime (tests/package): every rank finds
// who it is, joins the store and a Gloo communicator, and allreduces its
// rank. Prints "consumer rank=R world=W sum=S runtime=V" and exits 0 when
// the sum is 0+1+...+(W-1) and the library's version is the headers'.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/version.h"
#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/library_version.h"
#include "worker_runtime/store/store_client.h"

namespace rt = muster::runtime;

int main() {
  if (std::string(rt::LibraryVersion()) != muster::kVersion) {
    std::cerr << "consumer: library " << rt::LibraryVersion() << " but headers " << muster::kVersion
              << "\n";
    return 1;
  }
  auto ctx = rt::Context::FromProcessEnv();
  if (!ctx.ok()) {
    std::cerr << "consumer: " << ctx.status().message() << "\n";
    return 2;
  }
  std::unique_ptr<rt::StoreClient> store;
  if (ctx->world_size > 1) {
    auto connected = rt::StoreClient::Connect(
        {.host = ctx->master_addr, .port = ctx->master_port, .prefix = ctx->StoreNamespace()});
    if (!connected.ok()) {
      std::cerr << "consumer: " << connected.status().message() << "\n";
      return 1;
    }
    store = std::move(connected).value();
  }
  auto comm = rt::CreateCommunicator(*ctx, store.get(), {.backend = rt::Backend::kGloo});
  if (!comm.ok()) {
    std::cerr << "consumer: " << comm.status().message() << "\n";
    return 1;
  }
  std::vector<double> value(16, ctx->rank);
  try {
    (*comm)->AllReduce(value.data(), value.size(), rt::DataType::kFloat64, rt::ReduceOp::kSum);
  } catch (const rt::CommError& e) {
    std::cerr << "consumer: " << e.what() << "\n";
    return rt::kExitCommFailure;
  }
  const double want = ctx->world_size * (ctx->world_size - 1) / 2.0;
  std::cout << "consumer rank=" << ctx->rank << " world=" << ctx->world_size << " sum=" << value[0]
            << " runtime=" << rt::LibraryVersion() << std::endl;
  return value[0] == want && value[15] == want ? 0 : 1;
}
