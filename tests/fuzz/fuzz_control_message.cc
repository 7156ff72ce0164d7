// Fuzzes the agent<->worker control channel's parsers
// (control/control_message.h): the lines a worker writes on its control
// pipe (ParseWorkerMessage), and what a worker reads (ParseAgentMessage).
//
// Input: byte 0 picks the direction (even: worker -> agent, odd: agent ->
// worker); the rest is one line, without its '\n'.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is InvalidArgument with a one-line message;
//   - what parses formats back to a line that parses to an equal message
//     (control_message.h's contract);
//   - a line longer than kMaxLineBytes never parses.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "control/control_message.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using muster::fuzz::Printable;

void CheckRefusal(const muster::Status& status) {
  FUZZ_CHECK(status.IsInvalidArgument(), "not InvalidArgument: " + status.message());
  FUZZ_CHECK(status.message().find('\n') == std::string::npos,
             "a refusal of more than one line: " + Printable(status.message()));
}

template <typename Message, typename Parse, typename Format>
void RoundTrip(std::string_view line, Parse parse, Format format) {
  Message message;
  const muster::Status status = parse(line, message);
  if (!status.ok()) return CheckRefusal(status);
  FUZZ_CHECK(line.size() < muster::control::kMaxLineBytes,
             "a line of " + std::to_string(line.size()) + " bytes parsed");
  const std::string again = format(message);
  Message reparsed;
  const muster::Status second = parse(again, reparsed);
  FUZZ_CHECK(second.ok(), "the formatted line " + Printable(again) + " of " + Printable(line) +
                              " does not parse: " + second.message());
  FUZZ_CHECK(reparsed == message, "the formatted line " + Printable(again) + " of " +
                                      Printable(line) + " parses to another message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view line(reinterpret_cast<const char*>(data + 1), size - 1);
  if ((data[0] & 1) == 0) {
    RoundTrip<muster::control::WorkerMessage>(line, muster::control::ParseWorkerMessage,
                                              muster::control::FormatWorkerMessage);
  } else {
    RoundTrip<muster::control::AgentMessage>(line, muster::control::ParseAgentMessage,
                                             muster::control::FormatAgentMessage);
  }
  return 0;
}
