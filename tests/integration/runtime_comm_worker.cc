// Test-only: one rank of the communicator integration tests
// (runtime_comm_test.py). Reads torchrun's variables (RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT), connects to the store at
// MASTER_ADDR:MASTER_PORT and builds a communicator.
//
// Usage: runtime_comm_worker BACKEND SCENARIO TIMEOUT_MS [VICTIM_RANK]
//   BACKEND   auto | gloo | nccl
//   SCENARIO  values  every collective, values checked against formulas
//             die     VICTIM_RANK SIGKILLs itself before an allreduce
//             stall   VICTIM_RANK SIGSTOPs itself before an allreduce
//             reform  VICTIM_RANK SIGSTOPs itself before an allreduce; the
//                     others Interrupt() their communicator 300 ms later (as
//                     a pause in place does), then re-form without it: by
//                     Shrink() where the backend can, and by a new
//                     communicator, each checked with every collective.
//                     Prints "reform rank=R interrupt_ms=T
//                     shrink_ms=T|none|refused create_ms=T" (the new rank)
//                     and exits 0; "refused": a survivor's Shrink() failed
//                     (the survivors agree through the store, as a generation
//                     does, and none uses its child), the reason on stderr
//                     as "shrink refused by rank R: ...".
//             gpus    print "gpus=N" (visible CUDA devices) and exit 0
// Exit: 0 values right ("ok rank=R" on stdout); 75 (kExitCommFailure) a
// CommError, described on stderr as "comm_error kind=K elapsed_ms=T: ...";
// 1 a wrong value or a setup error.
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/comm/communicator_agreement.h"
#include "worker_runtime/store/store_client.h"

#if MUSTER_HAVE_NCCL
#include <cuda_runtime_api.h>

#include "worker_runtime/comm/nccl/cuda_devices.h"
#endif

namespace {

using muster::runtime::Backend;
using muster::runtime::CommError;
using muster::runtime::Communicator;
using muster::runtime::DataType;
using muster::runtime::ReduceOp;

// Where collective buffers live: host memory for Gloo, device memory for NCCL.
class Buffers {
 public:
  explicit Buffers(bool on_gpu) : on_gpu_(on_gpu) {}
  ~Buffers() {
    for (void* p : owned_) Free(p);
  }
  void* Upload(const void* host, size_t bytes) {
    void* p = Allocate(bytes);
    Copy(p, host, bytes, true);
    return p;
  }
  void Download(void* host, const void* p, size_t bytes) { Copy(host, p, bytes, false); }
  void* Allocate(size_t bytes) {
    void* p = nullptr;
#if MUSTER_HAVE_NCCL
    if (on_gpu_) {
      if (cudaMalloc(&p, bytes == 0 ? 1 : bytes) != cudaSuccess)
        throw std::runtime_error("cudaMalloc");
      owned_.push_back(p);
      return p;
    }
#endif
    p = std::calloc(bytes == 0 ? 1 : bytes, 1);
    owned_.push_back(p);
    return p;
  }

 private:
  void Copy(void* dst, const void* src, size_t bytes, bool to_buffer) {
#if MUSTER_HAVE_NCCL
    if (on_gpu_) {
      auto kind = to_buffer ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
      if (cudaMemcpy(dst, src, bytes, kind) != cudaSuccess) throw std::runtime_error("cudaMemcpy");
      return;
    }
#endif
    (void)to_buffer;
    std::memcpy(dst, src, bytes);
  }
  void Free(void* p) {
#if MUSTER_HAVE_NCCL
    if (on_gpu_) {
      cudaFree(p);
      return;
    }
#endif
    std::free(p);
  }

  bool on_gpu_;
  std::vector<void*> owned_;
};

struct Rank {
  Communicator& comm;
  Buffers& buffers;
  int rank;
  int world;
};

const char* OpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

void Expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("wrong value: " + what);
}

bool Close(double got, double want) {
  const double scale = std::max(1.0, std::abs(want));
  return std::abs(got - want) <= 1e-5 * scale;
}

// Rank r contributes (r + 1) + (i % 7) / 2 at element i: exact in every type.
double Contribution(int rank, size_t i) { return (rank + 1) + static_cast<double>(i % 7) / 2; }

double Reduced(ReduceOp op, int world, size_t i) {
  const double offset = static_cast<double>(i % 7) / 2;
  switch (op) {
    case ReduceOp::kSum:
      return world * (world + 1) / 2.0 + world * offset;
    case ReduceOp::kAvg:
      return (world + 1) / 2.0 + offset;
    case ReduceOp::kMax:
      return world + offset;
    case ReduceOp::kMin:
      return 1 + offset;
  }
  return 0;
}

template <typename T>
void CheckAllReduce(Rank& r, DataType type, ReduceOp op, size_t count, const char* type_name) {
  std::vector<T> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = static_cast<T>(Contribution(r.rank, i));
  void* data = r.buffers.Upload(host.data(), count * sizeof(T));
  r.comm.AllReduce(data, count, type, op);
  r.buffers.Download(host.data(), data, count * sizeof(T));
  for (size_t i = 0; i < count; ++i) {
    Expect(Close(host[i], Reduced(op, r.world, i)),
           std::string("allreduce ") + OpName(op) + " " + type_name +
               " count=" + std::to_string(count) + " element " + std::to_string(i) + " is " +
               std::to_string(static_cast<double>(host[i])) + ", want " +
               std::to_string(Reduced(op, r.world, i)));
  }
}

template <typename T>
void CheckBroadcastGatherScatter(Rank& r, DataType type, const char* type_name) {
  const int root = 1 % r.world;
  const size_t count = 1001;
  std::vector<T> host(count, T{0});
  if (r.rank == root) {
    for (size_t i = 0; i < count; ++i) host[i] = static_cast<T>(3 * i + 7);
  }
  void* data = r.buffers.Upload(host.data(), count * sizeof(T));
  r.comm.Broadcast(data, count, type, root);
  r.buffers.Download(host.data(), data, count * sizeof(T));
  for (size_t i = 0; i < count; ++i) {
    Expect(host[i] == static_cast<T>(3 * i + 7), std::string("broadcast ") + type_name + " from " +
                                                     std::to_string(root) + " element " +
                                                     std::to_string(i));
  }

  const size_t block = 5;
  std::vector<T> mine(block);
  for (size_t i = 0; i < block; ++i) mine[i] = static_cast<T>(100 * r.rank + i);
  void* send = r.buffers.Upload(mine.data(), block * sizeof(T));
  void* recv = r.buffers.Allocate(block * r.world * sizeof(T));
  r.comm.AllGather(send, recv, block, type);
  std::vector<T> all(block * r.world);
  r.buffers.Download(all.data(), recv, all.size() * sizeof(T));
  for (int peer = 0; peer < r.world; ++peer) {
    for (size_t i = 0; i < block; ++i) {
      Expect(all[peer * block + i] == static_cast<T>(100 * peer + i),
             std::string("allgather ") + type_name + " block of rank " + std::to_string(peer));
    }
  }

  // Element j of every rank's input is rank + j; block b of the sum is
  // sum_r (r + b * block + i).
  std::vector<T> whole(block * r.world);
  for (size_t j = 0; j < whole.size(); ++j) whole[j] = static_cast<T>(r.rank + j);
  void* scatter_send = r.buffers.Upload(whole.data(), whole.size() * sizeof(T));
  void* scatter_recv = r.buffers.Allocate(block * sizeof(T));
  r.comm.ReduceScatter(scatter_send, scatter_recv, block, type, ReduceOp::kSum);
  std::vector<T> got(block);
  r.buffers.Download(got.data(), scatter_recv, block * sizeof(T));
  for (size_t i = 0; i < block; ++i) {
    const double want = r.world * (r.world - 1) / 2.0 + r.world * (r.rank * block + i);
    Expect(Close(got[i], want),
           std::string("reduce_scatter ") + type_name + " element " + std::to_string(i) + " is " +
               std::to_string(static_cast<double>(got[i])) + ", want " + std::to_string(want));
  }
}

#if MUSTER_HAVE_NCCL
// 16-bit encodings of small exact values (integers and halves up to 2048).
uint16_t ToBFloat16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<uint16_t>(bits >> 16);
}
uint16_t ToHalf(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (v == 0) return 0;
  const uint32_t sign = (bits >> 16) & 0x8000;
  const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (exponent << 10) | ((bits >> 13) & 0x3ff));
}

void CheckSixteenBit(Rank& r, DataType type, uint16_t (*encode)(float), const char* name) {
  const size_t count = 64;
  std::vector<uint16_t> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = encode(static_cast<float>(Contribution(r.rank, i)));
  void* data = r.buffers.Upload(host.data(), count * 2);
  r.comm.AllReduce(data, count, type, ReduceOp::kSum);
  r.buffers.Download(host.data(), data, count * 2);
  for (size_t i = 0; i < count; ++i) {
    Expect(host[i] == encode(static_cast<float>(Reduced(ReduceOp::kSum, r.world, i))),
           std::string("allreduce sum ") + name + " element " + std::to_string(i));
  }
}
#endif

void CheckValues(Rank& r) {
  for (size_t count : {size_t{1}, size_t{1000}, size_t{300'000}}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
      CheckAllReduce<float>(r, DataType::kFloat32, op, count, "float32");
      CheckAllReduce<double>(r, DataType::kFloat64, op, count, "float64");
    }
  }
  CheckBroadcastGatherScatter<float>(r, DataType::kFloat32, "float32");
  CheckBroadcastGatherScatter<double>(r, DataType::kFloat64, "float64");
#if MUSTER_HAVE_NCCL
  if (r.comm.backend() == Backend::kNccl) {
    CheckSixteenBit(r, DataType::kFloat16, ToHalf, "float16");
    CheckSixteenBit(r, DataType::kBFloat16, ToBFloat16, "bfloat16");
  }
#endif
  r.comm.Barrier();
}

// Survivors of a lost peer: the allreduce must throw; so must any later call.
void LosePeer(Rank& r, int victim, int signal_number) {
  r.comm.Barrier();
  if (r.rank == victim) std::raise(signal_number);
  std::vector<float> host(1000, 1.0f);
  void* data = r.buffers.Upload(host.data(), host.size() * sizeof(float));
  try {
    r.comm.AllReduce(data, host.size(), DataType::kFloat32, ReduceOp::kSum);
  } catch (const CommError&) {
    try {
      r.comm.Barrier();
    } catch (const CommError&) {
      throw;  // the first error's kind and message are reported by main
    }
    throw std::runtime_error("a call after the failure did not throw");
  }
  throw std::runtime_error("the allreduce without a peer returned");
}

using Clock = std::chrono::steady_clock;

// Milliseconds with a tenth of a millisecond, as text.
std::string MillisecondsSince(Clock::time_point start) {
  const auto tenths =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count() / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10);
}

// The in-place recovery of a communicator, timed: the survivors of a peer
// that went silent are interrupted, then form a world without it.
int Reform(std::unique_ptr<Communicator> comm, Buffers& buffers,
           const muster::runtime::Context& ctx, const muster::runtime::CommOptions& options,
           int victim) {
  comm->Barrier();
  if (ctx.rank == victim) std::raise(SIGSTOP);
  Clock::time_point interrupted_at;
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    interrupted_at = Clock::now();
    comm->Interrupt();
  });
  std::vector<float> host(1000, 1.0f);
  bool failed = false;
  try {
    comm->AllReduce(buffers.Upload(host.data(), host.size() * sizeof(float)), host.size(),
                    DataType::kFloat32, ReduceOp::kSum);
  } catch (const CommError&) {
    failed = true;
  }
  interrupter.join();
  if (!failed) throw std::runtime_error("the allreduce without a peer returned");
  const std::string interrupt_ms = MillisecondsSince(interrupted_at);

  muster::runtime::Context next = ctx;
  next.rank = ctx.rank < victim ? ctx.rank : ctx.rank - 1;
  next.world_size = ctx.world_size - 1;
  auto store = muster::runtime::StoreClient::Connect({.host = ctx.master_addr,
                                                      .port = ctx.master_port,
                                                      .prefix = ctx.StoreNamespace() + "reform/",
                                                      .timeout = options.timeout});
  if (!store.ok()) throw std::runtime_error("store: " + store.status().message());
  std::string shrink_ms = "none";
  if (comm->CanShrink()) {
    const auto started = Clock::now();
    auto shrunk = comm->Shrink({victim});
    const std::string took = MillisecondsSince(started);
    // As a generation formed in place does: a child is used only when every
    // survivor got one (generation_communicator.cc).
    auto outcome = muster::runtime::AgreeOnShrinkOutcome(
        **store, next.rank, next.world_size, shrunk.ok() ? "" : shrunk.status().message(),
        options.timeout);
    if (!outcome.ok()) throw std::runtime_error("shrink outcome: " + outcome.status().message());
    if (outcome->empty()) {
      shrink_ms = took;
      Rank r{**shrunk, buffers, next.rank, next.world_size};
      CheckValues(r);
    } else {
      std::cerr << "shrink refused by " << *outcome << std::endl;
      shrink_ms = "refused";
      if (shrunk.ok()) (*shrunk)->Abort();
    }
  }
  comm.reset();
  const auto started = Clock::now();
  auto created = muster::runtime::CreateCommunicator(next, store->get(), options);
  if (!created.ok()) throw std::runtime_error("create: " + created.status().message());
  const std::string create_ms = MillisecondsSince(started);
  Rank r{**created, buffers, next.rank, next.world_size};
  CheckValues(r);
  std::cout << "reform rank=" << next.rank << " interrupt_ms=" << interrupt_ms
            << " shrink_ms=" << shrink_ms << " create_ms=" << create_ms << std::endl;
  return 0;
}

int VisibleGpus() {
#if MUSTER_HAVE_NCCL
  return muster::runtime::VisibleCudaDeviceCount();
#else
  return 0;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: runtime_comm_worker BACKEND SCENARIO [TIMEOUT_MS [VICTIM_RANK]]\n";
    return 1;
  }
  const std::string scenario = argv[2];
  if (scenario == "gpus") {
    std::cout << "gpus=" << VisibleGpus() << std::endl;
    return 0;
  }
  const auto timeout = std::chrono::milliseconds(argc > 3 ? std::atoi(argv[3]) : 30'000);
  const int victim = argc > 4 ? std::atoi(argv[4]) : -1;
  auto backend = muster::runtime::ParseBackend(argv[1]);
  auto ctx = muster::runtime::Context::FromProcessEnv();
  if (!backend.ok() || !ctx.ok()) {
    std::cerr << (backend.ok() ? ctx.status() : backend.status()).message() << std::endl;
    return 1;
  }
  auto store = muster::runtime::StoreClient::Connect({.host = ctx->master_addr,
                                                      .port = ctx->master_port,
                                                      .prefix = ctx->StoreNamespace(),
                                                      .timeout = timeout,
                                                      .connect_timeout = timeout});
  if (!store.ok()) {
    std::cerr << "store: " << store.status().message() << std::endl;
    return 1;
  }
  const muster::runtime::CommOptions options{
      .backend = *backend, .timeout = timeout, .recoverable = scenario == "reform"};
  auto comm = muster::runtime::CreateCommunicator(*ctx, store->get(), options);
  if (!comm.ok()) {
    std::cerr << "comm: " << comm.status().message() << std::endl;
    return 1;
  }
  Buffers buffers((*comm)->backend() == Backend::kNccl);
  if (scenario == "reform") {
    try {
      return Reform(std::move(comm).value(), buffers, *ctx, options, victim);
    } catch (const std::exception& e) {
      std::cerr << "rank " << ctx->rank << ": " << e.what() << std::endl;
      return 1;
    }
  }
  Rank r{**comm, buffers, ctx->rank, ctx->world_size};
  const auto started = std::chrono::steady_clock::now();
  try {
    if (scenario == "values") {
      CheckValues(r);
    } else if (scenario == "die") {
      LosePeer(r, victim, SIGKILL);
    } else if (scenario == "stall") {
      LosePeer(r, victim, SIGSTOP);
    } else {
      std::cerr << "unknown scenario '" << scenario << "'\n";
      return 1;
    }
  } catch (const CommError& e) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    std::cerr << "comm_error kind=" << muster::runtime::CommErrorKindName(e.kind())
              << " elapsed_ms=" << elapsed.count() << ": " << e.what() << std::endl;
    return muster::runtime::kExitCommFailure;
  } catch (const std::exception& e) {
    std::cerr << "rank " << r.rank << ": " << e.what() << std::endl;
    return 1;
  }
  std::cout << "ok rank=" << r.rank << " backend=" << muster::runtime::BackendName(r.comm.backend())
            << std::endl;
  return 0;
}
