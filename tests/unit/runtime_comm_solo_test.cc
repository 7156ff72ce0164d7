#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "worker_runtime/comm/communicator.h"

using muster::runtime::Backend;
using muster::runtime::CommError;
using muster::runtime::Communicator;
using muster::runtime::Context;
using muster::runtime::CreateCommunicator;
using muster::runtime::DataType;
using muster::runtime::ReduceOp;

namespace {

Context World(int size) {
  Context ctx;
  ctx.world_size = size;
  ctx.local_world_size = size;
  return ctx;
}

std::unique_ptr<Communicator> Solo() {
  auto comm = CreateCommunicator(World(1), nullptr, {.backend = Backend::kGloo});
  REQUIRE(comm.ok());
  return std::move(comm).value();
}

}  // namespace

TEST_CASE("a one-rank gloo world needs no store", "[comm]") {
  for (Backend backend : {Backend::kGloo, Backend::kAuto}) {
    if (backend == Backend::kAuto && MUSTER_HAVE_NCCL) continue;  // auto may find a GPU
    auto comm = CreateCommunicator(World(1), nullptr, {.backend = backend});
    REQUIRE(comm.ok());
    CHECK((*comm)->rank() == 0);
    CHECK((*comm)->world_size() == 1);
    CHECK((*comm)->backend() == Backend::kGloo);
  }
}

TEST_CASE("a backend request is checked at one rank as at many", "[comm]") {
  if (MUSTER_HAVE_NCCL) return;  // with NCCL the answer depends on the GPUs here
  auto comm = CreateCommunicator(World(1), nullptr, {.backend = Backend::kNccl});
  REQUIRE_FALSE(comm.ok());
  CHECK(comm.status().IsInvalidArgument());
  CHECK(comm.status().message().find("--backend nccl") != std::string::npos);
}

TEST_CASE("more than one rank without a store is refused", "[comm]") {
  auto comm = CreateCommunicator(World(2), nullptr, {.backend = Backend::kGloo});
  REQUIRE_FALSE(comm.ok());
  CHECK(comm.status().IsInvalidArgument());
  CHECK(comm.status().message().find("world size 2") != std::string::npos);
}

TEST_CASE("one rank's collectives leave its values and copy its blocks", "[comm]") {
  auto comm = Solo();
  std::vector<double> values = {1.5, -2, 3};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
    comm->AllReduce(values.data(), values.size(), DataType::kFloat64, op);
  }
  CHECK(values == std::vector<double>{1.5, -2, 3});
  std::vector<float> send = {4, 5}, recv = {0, 0};
  comm->AllGather(send.data(), recv.data(), 2, DataType::kFloat32);
  CHECK(recv == send);
  std::vector<float> scattered = {0, 0};
  comm->ReduceScatter(send.data(), scattered.data(), 2, DataType::kFloat32, ReduceOp::kSum);
  CHECK(scattered == send);
  comm->Barrier();
}

TEST_CASE("one rank rejects what gloo rejects and stays usable", "[comm]") {
  auto comm = Solo();
  std::vector<uint16_t> halves = {1, 2};
  CHECK_THROWS_AS(comm->AllReduce(halves.data(), 2, DataType::kFloat16, ReduceOp::kSum), CommError);
  double value = 1;
  CHECK_THROWS_AS(comm->Broadcast(&value, 1, DataType::kFloat64, 1), CommError);
  comm->Broadcast(&value, 1, DataType::kFloat64, 0);
  CHECK(value == 1);
}

TEST_CASE("after abort every collective of one rank throws", "[comm]") {
  auto comm = Solo();
  comm->Abort();
  comm->Abort();  // idempotent
  double value = 1;
  try {
    comm->AllReduce(&value, 1, DataType::kFloat64, ReduceOp::kSum);
    FAIL("allreduce after Abort() returned");
  } catch (const CommError& e) {
    CHECK(e.kind() == CommError::Kind::kInternal);
    CHECK(std::string(e.what()).find("Abort() was called") != std::string::npos);
  }
  CHECK_THROWS_AS(comm->Barrier(), CommError);
}
