// Names and sizes of the communicator's enums (declared in communicator.h).
#include <cstdint>

#include "worker_runtime/comm/communicator.h"

namespace muster::runtime {

size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
      return 8;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
  }
  return 0;
}

const char* BackendName(Backend backend) {
  switch (backend) {
    case Backend::kAuto:
      return "auto";
    case Backend::kGloo:
      return "gloo";
    case Backend::kNccl:
      return "nccl";
  }
  return "unknown";
}

const char* CommErrorKindName(CommError::Kind kind) {
  switch (kind) {
    case CommError::Kind::kTimeout:
      return "timeout";
    case CommError::Kind::kPeerFailed:
      return "peer_failed";
    case CommError::Kind::kInvalidArgument:
      return "invalid_argument";
    case CommError::Kind::kInternal:
      return "internal";
  }
  return "unknown";
}

Result<Backend> ParseBackend(const std::string& text) {
  for (Backend backend : {Backend::kAuto, Backend::kGloo, Backend::kNccl}) {
    if (text == BackendName(backend)) return backend;
  }
  return Status::InvalidArgument("--backend: '" + text + "' is not one of auto, gloo, nccl");
}

}  // namespace muster::runtime
