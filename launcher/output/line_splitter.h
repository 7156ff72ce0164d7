// LineSplitter: turns a byte stream into whole lines, so output from several
// workers is interleaved only at line boundaries. Pure; one per stream.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace muster {

class LineSplitter {
 public:
  // A line longer than this is emitted in pieces of this size, each ending
  // with '\n', so one runaway line cannot grow memory without bound.
  static constexpr size_t kMaxLine = 64 * 1024;

  using LineFn = std::function<void(std::string_view line)>;  // includes the '\n'

  // Calls `emit` for each line completed by `bytes`; keeps the rest.
  void Feed(std::string_view bytes, const LineFn& emit);
  // Emits a trailing partial line, with a '\n' appended. Call at end of stream.
  void Flush(const LineFn& emit);

 private:
  std::string partial_;
};

}  // namespace muster
