#include "worker_runtime/comm/gloo/allreduce_cache.h"

#include <cstring>
#include <vector>

#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>

namespace muster::runtime {
namespace {

// AllreduceRing reads its data pointer only in run(), so it can follow the
// caller's buffer from call to call.
template <typename T>
class RepointableAllreduceRing final : public gloo::AllreduceRing<T> {
 public:
  using gloo::AllreduceRing<T>::AllreduceRing;
  void Repoint(T* data) { this->ptrs_[0] = data; }
};

template <typename T>
const gloo::ReductionFunction<T>* ReductionFor(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax:
      return gloo::ReductionFunction<T>::max;
    case ReduceOp::kMin:
      return gloo::ReductionFunction<T>::min;
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      break;
  }
  return gloo::ReductionFunction<T>::sum;
}

// The reduction Gloo runs: an average is a sum here.
ReduceOp GlooReduction(ReduceOp op) { return op == ReduceOp::kAvg ? ReduceOp::kSum : op; }

}  // namespace

struct GlooAllreduceCache::Entry {
  int count;
  DataType type;
  ReduceOp op;
  GlooAllreduce algorithm;
  std::vector<char> staging;  // empty for the ring, which is re-pointed
  std::unique_ptr<gloo::Algorithm> instance;
  void (*repoint)(gloo::Algorithm*, void*) = nullptr;

  bool Matches(int c, DataType t, ReduceOp o, GlooAllreduce a) const {
    return count == c && type == t && op == o && algorithm == a;
  }
};

namespace {

template <typename T>
std::unique_ptr<gloo::Algorithm> Build(const std::shared_ptr<gloo::Context>& context,
                                       GlooAllreduce algorithm, T* data, int count, ReduceOp op) {
  const std::vector<T*> ptrs{data};
  const auto* fn = ReductionFor<T>(op);
  switch (algorithm) {
    case GlooAllreduce::kRing:
      return std::make_unique<RepointableAllreduceRing<T>>(context, ptrs, count, fn);
    case GlooAllreduce::kRingChunked:
      return std::make_unique<gloo::AllreduceRingChunked<T>>(context, ptrs, count, fn);
    case GlooAllreduce::kHalvingDoubling:
      return std::make_unique<gloo::AllreduceHalvingDoubling<T>>(context, ptrs, count, fn);
    case GlooAllreduce::kBcube:
      return std::make_unique<gloo::AllreduceBcube<T>>(context, ptrs, count, fn);
  }
  return nullptr;
}

template <typename T>
void RepointRing(gloo::Algorithm* algorithm, void* data) {
  static_cast<RepointableAllreduceRing<T>*>(algorithm)->Repoint(static_cast<T*>(data));
}

}  // namespace

GlooAllreduceCache::GlooAllreduceCache(std::shared_ptr<gloo::Context> context, size_t max_entries)
    : context_(std::move(context)), max_entries_(max_entries) {}

GlooAllreduceCache::~GlooAllreduceCache() = default;

void GlooAllreduceCache::Run(void* data, int count, DataType type, ReduceOp op,
                             GlooAllreduce algorithm) {
  op = GlooReduction(op);
  auto it = entries_.begin();
  while (it != entries_.end() && !(*it)->Matches(count, type, op, algorithm)) ++it;
  if (it != entries_.end()) {
    entries_.splice(entries_.begin(), entries_, it);
  } else {
    if (entries_.size() >= max_entries_) entries_.pop_back();
    auto entry = std::make_unique<Entry>();
    entry->count = count;
    entry->type = type;
    entry->op = op;
    entry->algorithm = algorithm;
    const bool f32 = type == DataType::kFloat32;
    void* bound = data;
    if (algorithm == GlooAllreduce::kRing) {
      entry->repoint = f32 ? &RepointRing<float> : &RepointRing<double>;
    } else {
      entry->staging.resize(static_cast<size_t>(count) * DataTypeSize(type));
      bound = entry->staging.data();
    }
    entry->instance = f32 ? Build(context_, algorithm, static_cast<float*>(bound), count, op)
                          : Build(context_, algorithm, static_cast<double*>(bound), count, op);
    entries_.push_front(std::move(entry));
  }
  Entry& entry = *entries_.front();
  if (entry.repoint != nullptr) {
    entry.repoint(entry.instance.get(), data);
    entry.instance->run();
    return;
  }
  std::memcpy(entry.staging.data(), data, entry.staging.size());
  entry.instance->run();
  std::memcpy(data, entry.staging.data(), entry.staging.size());
}

}  // namespace muster::runtime
