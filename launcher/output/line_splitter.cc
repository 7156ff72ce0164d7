#include "launcher/output/line_splitter.h"

namespace muster {

void LineSplitter::Feed(std::string_view bytes, const LineFn& emit) {
  while (!bytes.empty()) {
    const size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      const size_t room = kMaxLine - partial_.size();
      if (bytes.size() < room) {
        partial_.append(bytes);
        return;
      }
      partial_.append(bytes.substr(0, room));
      partial_.push_back('\n');
      emit(partial_);
      partial_.clear();
      bytes.remove_prefix(room);
      continue;
    }
    if (partial_.empty()) {
      // Common case: a whole line in the buffer, emitted without copying.
      emit(bytes.substr(0, newline + 1));
    } else {
      partial_.append(bytes.substr(0, newline + 1));
      emit(partial_);
      partial_.clear();
    }
    bytes.remove_prefix(newline + 1);
  }
}

void LineSplitter::Flush(const LineFn& emit) {
  if (partial_.empty()) return;
  partial_.push_back('\n');
  emit(partial_);
  partial_.clear();
}

}  // namespace muster
