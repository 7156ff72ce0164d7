#include "launcher/output/output_tail.h"

namespace muster {

void OutputTail::Append(std::string_view bytes) {
  if (bytes.size() >= capacity_) {
    text_.assign(bytes.substr(bytes.size() - capacity_));
    return;
  }
  text_.append(bytes);
  if (text_.size() > 2 * capacity_) text_.erase(0, text_.size() - capacity_);
}

}  // namespace muster
