// SharedMemoryAllreduce's arithmetic and its chunking: W threads play W
// ranks over one shared anonymous mapping (the processes and their
// killed or stalled peers are runtime_comm_test.py's). Counts that span
// several chunks and end mid-chunk, float and double, sum, max and min; and a
// rank that arrives after the others gave up.
#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "worker_runtime/comm/gloo/shared_memory_allreduce.h"

namespace {

using muster::runtime::CommError;
using muster::runtime::DataType;
using muster::runtime::ElementwiseFor;
using muster::runtime::ReduceOp;
using muster::runtime::SharedMemoryAllreduce;

// One shared, zero-filled segment for a world, unmapped at the end.
std::shared_ptr<std::byte> MapSegment(int world) {
  const size_t bytes = SharedMemoryAllreduce::SegmentBytes(world);
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(address != MAP_FAILED);
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(address),
                                    [bytes](std::byte* a) { munmap(a, bytes); });
}

// Rank r's value at index i: distinct per rank and index, exact in float.
template <typename T>
T ValueOf(int rank, size_t i) {
  return static_cast<T>(static_cast<double>((i * 7 + static_cast<size_t>(rank) * 13) % 1000) -
                        500.0);
}

// Runs `calls` allreduces on every rank, each rank in its own thread; returns
// each rank's buffers after them.
template <typename T>
std::vector<std::vector<T>> RunWorld(int world, size_t count, ReduceOp op, int calls) {
  auto segment = MapSegment(world);
  const std::span<std::byte> bytes(segment.get(), SharedMemoryAllreduce::SegmentBytes(world));
  std::vector<std::vector<T>> buffers(static_cast<size_t>(world));
  std::vector<std::optional<SharedMemoryAllreduce::Failure>> failures(static_cast<size_t>(world));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      SharedMemoryAllreduce reduce(bytes, r, world, std::chrono::seconds(30), {});
      auto& data = buffers[static_cast<size_t>(r)];
      for (int call = 0; call < calls; ++call) {
        data.resize(count);
        for (size_t i = 0; i < count; ++i) data[i] = ValueOf<T>(r, i);
        const DataType type = sizeof(T) == 4 ? DataType::kFloat32 : DataType::kFloat64;
        failures[static_cast<size_t>(r)] =
            reduce.AllReduce(data.data(), count, type, ElementwiseFor(type, op));
        if (failures[static_cast<size_t>(r)]) return;
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  for (const auto& failure : failures) REQUIRE_FALSE(failure.has_value());
  return buffers;
}

template <typename T>
void CheckWorld(int world, size_t count, ReduceOp op) {
  CAPTURE(world, count, sizeof(T));
  // Two calls: the second starts in the other bank of the segment.
  const auto buffers = RunWorld<T>(world, count, op, 2);
  for (size_t i = 0; i < count; ++i) {
    T want = ValueOf<T>(0, i);
    for (int r = 1; r < world; ++r) {
      const T v = ValueOf<T>(r, i);
      want = op == ReduceOp::kMax   ? std::max(want, v)
             : op == ReduceOp::kMin ? std::min(want, v)
                                    : want + v;
    }
    for (int r = 0; r < world; ++r) {
      if (buffers[static_cast<size_t>(r)][i] != want) {
        FAIL("rank " << r << " element " << i << ": " << buffers[static_cast<size_t>(r)][i]
                     << ", want " << want);
      }
    }
  }
}

}  // namespace

TEST_CASE("the shared-memory allreduce sums across ranks, chunk by chunk", "[comm]") {
  const size_t chunk_floats = SharedMemoryAllreduce::kChunkBytes / sizeof(float);
  for (int world : {2, 3, 4}) {
    CheckWorld<float>(world, 1, ReduceOp::kSum);
    CheckWorld<float>(world, 1001, ReduceOp::kSum);
    CheckWorld<float>(world, 2 * chunk_floats + 5, ReduceOp::kSum);
    CheckWorld<double>(world, chunk_floats + 3, ReduceOp::kSum);
  }
}

TEST_CASE("the shared-memory allreduce takes the max and the min", "[comm]") {
  CheckWorld<float>(3, 4099, ReduceOp::kMax);
  CheckWorld<double>(4, 4099, ReduceOp::kMin);
}

TEST_CASE("every rank of the shared-memory allreduce ends with identical bits", "[comm]") {
  // Sums of values that round differently in different orders.
  auto segment = MapSegment(3);
  const std::span<std::byte> bytes(segment.get(), SharedMemoryAllreduce::SegmentBytes(3));
  std::vector<std::vector<float>> data(3, std::vector<float>(999));
  std::vector<std::optional<SharedMemoryAllreduce::Failure>> failures(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.emplace_back([&, r] {
      auto& mine = data[static_cast<size_t>(r)];
      for (size_t i = 0; i < mine.size(); ++i) mine[i] = 1.0f / static_cast<float>(i + 3 + r);
      SharedMemoryAllreduce reduce(bytes, r, 3, std::chrono::seconds(30), {});
      failures[static_cast<size_t>(r)] =
          reduce.AllReduce(mine.data(), mine.size(), DataType::kFloat32,
                           ElementwiseFor(DataType::kFloat32, ReduceOp::kSum));
    });
  }
  for (std::thread& t : ranks) t.join();
  for (const auto& failure : failures) CHECK_FALSE(failure.has_value());
  CHECK(data[0] == data[1]);
  CHECK(data[0] == data[2]);
}

TEST_CASE("a rank that arrives after the others gave up fails too", "[comm]") {
  // Ranks 0 and 1 time out waiting for rank 2; rank 2 then arrives last. It
  // must not open the barrier and succeed where they failed. Rank 2 arrives
  // well after they gave up, so this covers the "already gave up" path; the
  // race of a give-up against the last arrival is not forced here.
  auto segment = MapSegment(3);
  const std::span<std::byte> bytes(segment.get(), SharedMemoryAllreduce::SegmentBytes(3));
  std::vector<std::optional<SharedMemoryAllreduce::Failure>> failures(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.emplace_back([&, r] {
      if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(600));
      SharedMemoryAllreduce reduce(bytes, r, 3, std::chrono::milliseconds(150), {});
      float value = 1.0f;
      failures[static_cast<size_t>(r)] = reduce.AllReduce(
          &value, 1, DataType::kFloat32, ElementwiseFor(DataType::kFloat32, ReduceOp::kSum));
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 3; ++r) {
    CAPTURE(r);
    REQUIRE(failures[static_cast<size_t>(r)].has_value());
  }
  // The first to give up timed out; everyone else learns another rank failed.
  int timeouts = 0;
  for (const auto& failure : failures) timeouts += failure->kind == CommError::Kind::kTimeout;
  CHECK(timeouts >= 1);
  CHECK(failures[2]->kind == CommError::Kind::kPeerFailed);
}
