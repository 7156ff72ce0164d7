// OutputTail: the last bytes a worker wrote to one stream, kept so that the
// failure report can explain a failure the worker only printed (Python's
// "No module named 'torch'" comes before any error file can be written).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace muster {

class OutputTail {
 public:
  // Keeps at most `capacity` bytes: the newest.
  explicit OutputTail(std::size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  // Appends `bytes` as they came (partial lines included), dropping the
  // oldest bytes beyond the capacity.
  void Append(std::string_view bytes);
  const std::string& text() const { return text_; }

  // A Python traceback's last lines fit with room to spare.
  static constexpr std::size_t kDefaultCapacity = 4096;

 private:
  std::size_t capacity_;
  std::string text_;
};

}  // namespace muster
