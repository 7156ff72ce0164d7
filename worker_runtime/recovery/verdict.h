// Verdict: what a worker that recovers in place does after a call that may
// end its generation (InPlaceWorker's Form, Poll, Joined, Leave, AwaitJoin,
// in_place_worker.h).
//
//   Verdict v = worker.Poll();     // between steps
//   if (!v.goes_on()) return v;    // leave the generation, or exit
//
// The kinds:
//   kGoOn   the generation runs (or, from AwaitJoin, was joined): go on.
//   kLeave  this worker left its generation and keeps its process and its
//           state: call InPlaceWorker::AwaitJoin() next.
//   kExit   the process should exit with exit_code(); the reason was
//           already logged. The agent restarts it (or the job) as it would
//           any worker that exits.
//
// Thread-safety: a value type.
#pragma once

namespace muster::runtime {

class [[nodiscard]] Verdict {
 public:
  enum class Kind { kGoOn, kLeave, kExit };

  static Verdict GoOn() { return Verdict(Kind::kGoOn, 0); }
  static Verdict Leave() { return Verdict(Kind::kLeave, 0); }
  static Verdict Exit(int code) { return Verdict(Kind::kExit, code); }

  Kind kind() const { return kind_; }
  bool goes_on() const { return kind_ == Kind::kGoOn; }
  bool leaves() const { return kind_ == Kind::kLeave; }
  bool exits() const { return kind_ == Kind::kExit; }
  // The process's exit status for kExit; 0 for the other kinds.
  int exit_code() const { return exit_code_; }

  bool operator==(const Verdict&) const = default;

 private:
  Verdict(Kind kind, int exit_code) : kind_(kind), exit_code_(exit_code) {}

  Kind kind_;
  int exit_code_;
};

}  // namespace muster::runtime
