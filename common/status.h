// Status and Result<T>: how muster reports recoverable errors without
// exceptions. Success is cheap (no allocation); an error carries a code and a
// human-readable message that quotes the offending value.
//
//   Result<int> r = ParsePort("99999");
//   if (!r.ok()) return r.status();   // "--master-port: '99999' is not a port"
//
// Thread-safety: values, no shared state.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace muster {

class [[nodiscard]] Status {
 public:
  enum class Code { kOk, kInvalidArgument, kNotFound, kIoError, kTimeout, kFailedPrecondition };

  Status() = default;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {Code::kInvalidArgument, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {Code::kNotFound, std::move(msg)}; }
  static Status IoError(std::string msg) { return {Code::kIoError, std::move(msg)}; }
  static Status Timeout(std::string msg) { return {Code::kTimeout, std::move(msg)}; }
  static Status FailedPrecondition(std::string msg) {
    return {Code::kFailedPrecondition, std::move(msg)};
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsIoError() const { return code_ == Code::kIoError; }
  bool IsTimeout() const { return code_ == Code::kTimeout; }
  const std::string& message() const { return message_; }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

// Either a value or a non-OK Status.
// REQUIRES: value() only when ok(); status() is OK when a value is held.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok());
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace muster
