#include "launcher/agent/hang_evidence.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <utility>

namespace muster {

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// The bytes of `path` from `offset` on (what a dump appended); at most 1 MiB,
// so a script that floods the file cannot make the agent hold it all.
std::string ReadFrom(const std::string& path, uint64_t offset) {
  constexpr uint64_t kMaxDump = 1 << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::string text(kMaxDump, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

// How much of a field grew between two samples; 0 when either is unknown.
uint64_t Growth(const ProcessActivity& before, const ProcessActivity& after,
                std::optional<uint64_t> ProcessActivity::*field) {
  const auto& a = before.*field;
  const auto& b = after.*field;
  return a && b && *b > *a ? *b - *a : 0;
}

}  // namespace

ProcessActivity ReadProcessActivity(pid_t pid) {
  ProcessActivity activity;
  const std::string base = "/proc/" + std::to_string(pid);
  // utime and stime are fields 14 and 15; the command name (field 2) may
  // hold spaces and parentheses, so count from the last ')'.
  const std::string stat = ReadFile(base + "/stat");
  if (const auto close = stat.rfind(')'); close != std::string::npos) {
    std::istringstream fields(stat.substr(close + 1));
    std::string field;
    uint64_t utime = 0;
    uint64_t stime = 0;
    int index = 3;
    bool found = false;
    while (fields >> field) {
      if (index == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
      if (index == 15) {
        stime = std::strtoull(field.c_str(), nullptr, 10);
        found = true;
        break;
      }
      ++index;
    }
    if (found) activity.cpu_ticks = utime + stime;
  }
  std::istringstream io(ReadFile(base + "/io"));
  std::string name;
  uint64_t value = 0;
  uint64_t bytes = 0;
  int seen = 0;
  while (io >> name >> value) {
    if (name == "rchar:" || name == "wchar:") {
      bytes += value;
      ++seen;
    }
  }
  if (seen == 2) activity.io_bytes = bytes;
  return activity;
}

HangEvidence::HangEvidence(boost::asio::io_context& io, int stack_signal, Timing timing)
    : io_(io), stack_signal_(stack_signal), timing_(timing), timer_(io) {}

void HangEvidence::After(std::chrono::milliseconds delay, std::function<void()> then) {
  const uint64_t round = round_;
  timer_.expires_after(delay);
  timer_.async_wait([this, round, then = std::move(then)](const boost::system::error_code& ec) {
    if (ec || round != round_ || !busy_) return;
    then();
  });
}

void HangEvidence::SignalAll(std::vector<Gathered>& ranks) {
  for (Gathered& rank : ranks) {
    if (!rank.worker.dumps_stacks || rank.worker.stack_file.empty()) continue;
    rank.offset = FileSize(rank.worker.stack_file);
    // To the main thread: its blocking calls are retried after the handler
    // (PEP 475); the worker's own threads are left alone.
    const pid_t pid = rank.worker.pid;
    syscall(SYS_tgkill, pid, pid, stack_signal_);
  }
}

void HangEvidence::Gather(std::vector<HangSubject> subjects, std::string report_path, Done done) {
  busy_ = true;
  ++round_;
  ranks_.clear();
  for (HangSubject& subject : subjects)
    ranks_.push_back(Gathered{std::move(subject), 0, {}, {}, {}});
  report_path_ = std::move(report_path);
  done_ = std::move(done);
  SignalAll(ranks_);
  After(timing_.settle, [this] {
    for (Gathered& rank : ranks_) {
      rank.first = ReadFrom(rank.worker.stack_file, rank.offset);
      rank.first_sample = ReadProcessActivity(rank.worker.pid);
    }
    After(timing_.window, [this] {
      for (Gathered& rank : ranks_) {
        rank.second_sample = ReadProcessActivity(rank.worker.pid);
      }
      SignalAll(ranks_);
      After(timing_.settle, [this] { Judge(); });
    });
  });
}

void HangEvidence::Cancel() {
  ++round_;
  busy_ = false;
  timer_.cancel();
  done_ = nullptr;
}

void HangEvidence::Judge() {
  evidence_.clear();
  seconds_.clear();
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const Gathered& rank = ranks_[i];
    const HangSubject& worker = rank.worker;
    seconds_.push_back(ReadFrom(rank.worker.stack_file, rank.offset));
    RankEvidence e;
    e.global_rank = worker.global_rank;
    e.dumps_stacks = worker.dumps_stacks;
    e.first = ParseStackDump(rank.first);
    e.second = ParseStackDump(seconds_.back());
    // An idle process still takes a tick now and then (its runtime's
    // threads): working is a share of the window, or bytes in earnest.
    const double cpu_ms = static_cast<double>(Growth(rank.first_sample, rank.second_sample,
                                                     &ProcessActivity::cpu_ticks)) *
                          1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
    e.used_cpu = cpu_ms >= kBusyShare * static_cast<double>(timing_.window.count());
    e.did_io =
        Growth(rank.first_sample, rank.second_sample, &ProcessActivity::io_bytes) >= kBusyBytes;
    evidence_.push_back(std::move(e));
  }
  verdict_ = JudgeHang(evidence_);
  dumps_.clear();
  dump_sizes_.clear();
  dumps_asked_.clear();
  // Asked only once judged hung: a dump's own writing would read as the
  // ranks' I/O, and a live job needs none.
  if (!verdict_.alive) {
    std::vector<int> ranks;
    for (const Gathered& rank : ranks_) ranks.push_back(rank.worker.global_rank);
    dumps_asked_ = AskForDumps(flight_recorder_, ranks);
    dumps_asked_at_ = std::chrono::system_clock::now();
  }
  if (dumps_asked_.empty()) return Report();
  WaitForDumps(std::chrono::steady_clock::now() + kDumpWait);
}

void HangEvidence::WaitForDumps(std::chrono::steady_clock::time_point deadline) {
  After(kDumpPoll, [this, deadline] {
    dumps_ = FinishedDumps(flight_recorder_, dumps_asked_, dumps_asked_at_, dump_sizes_);
    if (dumps_.size() == dumps_asked_.size() || std::chrono::steady_clock::now() >= deadline) {
      return Report();
    }
    WaitForDumps(deadline);
  });
}

void HangEvidence::Report() {
  std::string written;
  if (!verdict_.alive && !report_path_.empty()) {
    std::ofstream out(report_path_, std::ios::trunc);
    out << "muster: hang evidence\nverdict: " << verdict_.summary << "\n";
    for (size_t i = 0; i < ranks_.size(); ++i) {
      const HangSubject& worker = ranks_[i].worker;
      out << "\n== rank " << worker.global_rank << " (local_rank " << worker.local_rank << ", pid "
          << worker.pid << ")" << (evidence_[i].used_cpu ? ", used CPU" : "")
          << (evidence_[i].did_io ? ", did I/O" : "") << "\n";
      if (!worker.dumps_stacks) {
        out << "(no stacks: not a warm-started Python worker)\n";
      } else if (seconds_[i].empty()) {
        out << "(no dump: stopped, or blocked in the kernel)\n";
      } else {
        out << seconds_[i];
      }
    }
    if (!dumps_asked_.empty()) {
      out << "\n== NCCL flight recorder (torch's dump of each rank's last collectives)\n";
      for (int rank : dumps_asked_) {
        const auto dump = dumps_.find(rank);
        out << "rank " << rank << ": "
            << (dump != dumps_.end()
                    ? dump->second
                    : "asked, not written within " + std::to_string(kDumpWait.count()) + " ms")
            << "\n";
      }
    }
    out.flush();
    if (out) {
      written = report_path_;
    } else {
      spdlog::warn("could not write the hang's stacks to {}", report_path_);
    }
  }
  if (!dumps_.empty()) {
    std::string list;
    for (const auto& [rank, path] : dumps_) list += (list.empty() ? "" : ",") + path;
    spdlog::info("event=nccl_flight_recorder dumps={}", list);
  }
  busy_ = false;
  Done done = std::move(done_);
  done_ = nullptr;
  if (done) done(verdict_, written);
}

}  // namespace muster
