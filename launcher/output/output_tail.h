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
  // Called for every chunk a worker writes to stderr: amortized, it copies
  // each byte a bounded number of times (the buffer is cut back to the
  // capacity only once it holds twice as much).
  void Append(std::string_view bytes);
  // The newest `capacity` bytes (fewer before that many came).
  std::string_view text() const {
    return std::string_view(text_).substr(text_.size() > capacity_ ? text_.size() - capacity_ : 0);
  }

  // A Python traceback's last lines fit with room to spare.
  static constexpr std::size_t kDefaultCapacity = 4096;

 private:
  std::size_t capacity_;
  std::string text_;
};

}  // namespace muster
