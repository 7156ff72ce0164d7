// The classic gradient-averaging check, through the trainer's own bucketed
// reducer and a real communicator: Linear(1->1) without bias, weight 1, rank
// r's input [2r, 2r+1], loss sum(y^2). d loss / dw = 2 w sum(x^2), scaled by
// 1/W before the cross-rank sum, so every rank must end with
// (2/W) * sum_r (4r^2 + (2r+1)^2) — exactly 14 with two ranks.
// Prints "rank=R grad=G" (G with 9 significant digits).
#include <cstdio>
#include <memory>

#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/store/store_client.h"
#include "worker_runtime/train/bucketed_reducer.h"

using namespace muster;

int main() {
  auto ctx = runtime::Context::FromProcessEnv();
  if (!ctx.ok()) {
    std::fprintf(stderr, "%s\n", ctx.status().message().c_str());
    return 2;
  }
  auto store = runtime::StoreClient::Connect(
      {.host = ctx->master_addr, .port = ctx->master_port, .prefix = ctx->StoreNamespace()});
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().message().c_str());
    return 1;
  }
  auto comm = runtime::CreateCommunicator(*ctx, store->get(), {.backend = runtime::Backend::kGloo});
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().message().c_str());
    return 1;
  }
  const float w = 1.0f;
  const float r = static_cast<float>(ctx->rank);
  const float x[2] = {2 * r, 2 * r + 1};
  double grad[1] = {0};
  for (float xi : x) grad[0] += 2.0 * w * xi * xi;  // d/dw (w x)^2
  grad[0] /= ctx->world_size;

  std::vector<train::ParamTensor> tensors{{"weight", 0, 1}};
  train::BucketedReducer reducer(
      **comm, tensors, sizeof(double), 1 << 20, true,
      {.reduce = [&](runtime::Communicator& c, const train::BucketedReducer::Bucket& b, size_t) {
        c.AllReduce(grad + b.offset, b.size, runtime::DataType::kFloat64, runtime::ReduceOp::kSum);
      }});
  reducer.BeginStep();
  reducer.TensorReady(0);
  reducer.Finish();
  std::printf("rank=%d grad=%.9g\n", ctx->rank, grad[0]);
  return 0;
}
