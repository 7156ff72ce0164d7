#include "worker_runtime/comm/host_reduction.h"

#include <gloo/math.h>

namespace muster::runtime {
namespace {

template <typename T>
ElementwiseReduction ElementwiseOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax:
      return static_cast<ElementwiseReduction>(&gloo::max<T>);
    case ReduceOp::kMin:
      return static_cast<ElementwiseReduction>(&gloo::min<T>);
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      break;
  }
  return static_cast<ElementwiseReduction>(&gloo::sum<T>);
}

[[noreturn]] void RefuseHalfPrecision(const char* what) {
  throw CommError(CommError::Kind::kInvalidArgument,
                  std::string(what) + " on host memory supports float32 and float64 only");
}

template <typename T>
void Divide(T* data, size_t count, T divisor) {
  for (size_t i = 0; i < count; ++i) data[i] /= divisor;
}

}  // namespace

ElementwiseReduction ElementwiseFor(DataType type, ReduceOp op) {
  switch (type) {
    case DataType::kFloat32:
      return ElementwiseOf<float>(op);
    case DataType::kFloat64:
      return ElementwiseOf<double>(op);
    case DataType::kFloat16:
    case DataType::kBFloat16:
      break;
  }
  RefuseHalfPrecision("reduction");
}

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
  RefuseHalfPrecision("average");
}

}  // namespace muster::runtime
