#include "launcher/output/worker_outputs.h"

namespace muster {

WorkerOutputs::WorkerOutputs(boost::asio::io_context& io, const LaunchOptions& options)
    : options_(options), held_timer_(io) {}

std::string WorkerOutputs::PrefixFor(int rank) const {
  return options_.prefix_output ? "[rank" + std::to_string(rank) + "]: " : "";
}

Status WorkerOutputs::Open(const std::vector<WorkerSpec>& specs, const std::string& attempt_dir) {
  if (specs.empty()) return Status::Ok();
  if (filtered_dir_ != attempt_dir) {
    auto filtered = OpenFilteredCopies(options_, attempt_dir);
    if (!filtered.ok()) return filtered.status();
    filtered_ = std::move(filtered).value();
    filtered_dir_ = attempt_dir;
  }
  for (const auto& spec : specs) {
    const int lr = spec.local_rank;
    const WorkerRoutes routes =
        RoutesFor(options_, lr, attempt_dir + "/" + std::to_string(lr), filtered_);
    auto output = WorkerOutput::Open(PrefixFor(spec.global_rank), routes.out, routes.err);
    if (!output.ok()) return output.status();
    outputs_[spec.request.tag] = std::move(output).value();
    open_streams_[spec.request.tag] = 2;
  }
  return Status::Ok();
}

void WorkerOutputs::Clear() {
  outputs_.clear();
  open_streams_.clear();
  stderr_tails_.clear();
}

void WorkerOutputs::Write(uint64_t tag, Stream stream, std::string_view bytes) {
  if (stream == Stream::kStderr) stderr_tails_[tag].Append(bytes);
  auto it = outputs_.find(tag);
  if (it == outputs_.end()) return;
  it->second->Write(stream, bytes);
  if (auto due = it->second->held_until()) ReleaseHeldAt(*due);
}

void WorkerOutputs::ReleaseHeldAt(Time due) {
  // One timer serves every worker, set for the earliest held line.
  if (held_due_ && *held_due_ <= due) return;
  held_due_ = due;
  held_timer_.expires_at(due);
  held_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // set for an earlier time, or the agent is finishing
    held_due_.reset();
    const auto now = Clock::now();
    std::optional<Time> next;
    for (auto& [tag, output] : outputs_) {
      output->ReleaseHeld(now);
      if (auto when = output->held_until(); when && (!next || *when < *next)) next = when;
    }
    if (next) ReleaseHeldAt(*next);
  });
}

void WorkerOutputs::Closed(uint64_t tag, Stream stream) {
  if (auto it = outputs_.find(tag); it != outputs_.end()) it->second->Close(stream);
  if (auto it = open_streams_.find(tag); it != open_streams_.end() && --it->second == 0) {
    open_streams_.erase(it);
  }
}

void WorkerOutputs::CloseAll(const std::function<void(uint64_t tag)>& stop_reading) {
  for (auto& [tag, output] : outputs_) {
    output->Close(Stream::kStdout);
    output->Close(Stream::kStderr);
    stop_reading(tag);
  }
  outputs_.clear();
  open_streams_.clear();
}

void WorkerOutputs::SetRank(uint64_t tag, int rank) {
  if (auto out = outputs_.find(tag); out != outputs_.end() && options_.prefix_output) {
    out->second->SetPrefix(PrefixFor(rank));
  }
}

std::optional<std::string_view> WorkerOutputs::StderrTail(uint64_t tag) const {
  auto it = stderr_tails_.find(tag);
  if (it == stderr_tails_.end()) return std::nullopt;
  return it->second.text();
}

}  // namespace muster
