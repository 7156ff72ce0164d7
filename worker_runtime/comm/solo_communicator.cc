#include "worker_runtime/comm/solo_communicator.h"

#include <cstring>
#include <string>

namespace muster::runtime {

void SoloCommunicator::Check(const char* op, DataType type) const {
  latch_.ThrowIfAborted(op);
  if (type != DataType::kFloat32 && type != DataType::kFloat64) {
    throw CommError(CommError::Kind::kInvalidArgument,
                    std::string("solo ") + op + ": only float32 and float64 are supported");
  }
}

void SoloCommunicator::AllReduce(void*, size_t, DataType type, ReduceOp) {
  Check("allreduce", type);
}

void SoloCommunicator::Broadcast(void*, size_t, DataType type, int root) {
  Check("broadcast", type);
  if (root != 0) {
    throw CommError(CommError::Kind::kInvalidArgument,
                    "solo broadcast: root " + std::to_string(root) + " is not a rank of 1");
  }
}

void SoloCommunicator::AllGather(const void* send, void* recv, size_t count, DataType type) {
  Check("allgather", type);
  if (send != recv) std::memmove(recv, send, count * DataTypeSize(type));
}

void SoloCommunicator::ReduceScatter(const void* send, void* recv, size_t count, DataType type,
                                     ReduceOp) {
  Check("reduce_scatter", type);
  if (send != recv) std::memmove(recv, send, count * DataTypeSize(type));
}

void SoloCommunicator::Barrier() { latch_.ThrowIfAborted("barrier"); }

void SoloCommunicator::Abort() { latch_.Latch(CommError::Kind::kInternal, "Abort() was called"); }

}  // namespace muster::runtime
