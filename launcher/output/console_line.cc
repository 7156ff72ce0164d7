#include "launcher/output/console_line.h"

namespace muster {

void ConsoleLine::BeforeWrite(const ConsoleStream& writer, std::string& out) {
  if (open_by_ != &writer) BeforeOwnLine(out);
}

void ConsoleLine::BeforeOwnLine(std::string& out) {
  if (open_by_ == nullptr) return;
  out.push_back('\n');
  open_by_->LineEndedElsewhere();
  open_by_ = nullptr;
}

void ConsoleLine::AfterWrite(ConsoleStream& writer) {
  if (writer.line_open()) {
    open_by_ = &writer;
  } else if (open_by_ == &writer) {
    open_by_ = nullptr;
  }
}

void ConsoleLine::Forget(const ConsoleStream& stream) {
  if (open_by_ == &stream) open_by_ = nullptr;
}

}  // namespace muster
