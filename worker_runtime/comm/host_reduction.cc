#include "worker_runtime/comm/host_reduction.h"

namespace muster::runtime {
namespace {

template <typename T>
void Divide(T* data, size_t count, T divisor) {
  for (size_t i = 0; i < count; ++i) data[i] /= divisor;
}

}  // namespace

void DivideInPlace(void* data, size_t count, DataType type, int divisor) {
  switch (type) {
    case DataType::kFloat32:
      return Divide(static_cast<float*>(data), count, static_cast<float>(divisor));
    case DataType::kFloat64:
      return Divide(static_cast<double*>(data), count, static_cast<double>(divisor));
    case DataType::kFloat16:
    case DataType::kBFloat16:
      break;
  }
  throw CommError(CommError::Kind::kInvalidArgument,
                  "average on host memory supports float32 and float64 only");
}

}  // namespace muster::runtime
