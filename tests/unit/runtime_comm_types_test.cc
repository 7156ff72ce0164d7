#include <catch2/catch.hpp>

#include <string>

#include "worker_runtime/comm/backend_choice.h"
#include "worker_runtime/comm/communicator.h"

using muster::runtime::Backend;
using muster::runtime::BackendName;
using muster::runtime::CommError;
using muster::runtime::CommErrorKindName;
using muster::runtime::DataType;
using muster::runtime::DataTypeSize;
using muster::runtime::ParseBackend;
using muster::runtime::ResolveBackend;

TEST_CASE("element sizes match the C types of each data type", "[comm]") {
  CHECK(DataTypeSize(DataType::kFloat32) == sizeof(float));
  CHECK(DataTypeSize(DataType::kFloat64) == sizeof(double));
  CHECK(DataTypeSize(DataType::kFloat16) == 2);
  CHECK(DataTypeSize(DataType::kBFloat16) == 2);
}

TEST_CASE("backend names round-trip through the parser", "[comm]") {
  for (Backend backend : {Backend::kAuto, Backend::kGloo, Backend::kNccl}) {
    auto parsed = ParseBackend(BackendName(backend));
    REQUIRE(parsed.ok());
    CHECK(*parsed == backend);
  }
}

TEST_CASE("an unknown backend is rejected with the bad value quoted", "[comm]") {
  auto parsed = ParseBackend("mpi");
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.status().IsInvalidArgument());
  CHECK(parsed.status().message().find("'mpi'") != std::string::npos);
  CHECK_FALSE(ParseBackend("NCCL").ok());
  CHECK_FALSE(ParseBackend("").ok());
}

TEST_CASE("auto picks nccl only when built with it and a gpu is visible", "[comm]") {
  CHECK(*ResolveBackend(Backend::kAuto, true, 8) == Backend::kNccl);
  CHECK(*ResolveBackend(Backend::kAuto, true, 0) == Backend::kGloo);
  CHECK(*ResolveBackend(Backend::kAuto, false, 8) == Backend::kGloo);
  CHECK(*ResolveBackend(Backend::kGloo, true, 8) == Backend::kGloo);
}

TEST_CASE("asking for nccl without it names the missing piece", "[comm]") {
  auto no_build = ResolveBackend(Backend::kNccl, false, 4);
  REQUIRE_FALSE(no_build.ok());
  CHECK(no_build.status().message().find("no NCCL") != std::string::npos);
  auto no_gpu = ResolveBackend(Backend::kNccl, true, 0);
  REQUIRE_FALSE(no_gpu.ok());
  CHECK(no_gpu.status().message().find("no GPU") != std::string::npos);
  CHECK(*ResolveBackend(Backend::kNccl, true, 1) == Backend::kNccl);
}

TEST_CASE("each comm error kind has its own log name", "[comm]") {
  CHECK(std::string(CommErrorKindName(CommError::Kind::kTimeout)) == "timeout");
  CHECK(std::string(CommErrorKindName(CommError::Kind::kPeerFailed)) == "peer_failed");
  CHECK(std::string(CommErrorKindName(CommError::Kind::kInvalidArgument)) == "invalid_argument");
  CHECK(std::string(CommErrorKindName(CommError::Kind::kInternal)) == "internal");
}
