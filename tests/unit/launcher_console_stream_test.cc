#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "launcher/output/console_line.h"
#include "launcher/output/console_stream.h"

using namespace muster;
using namespace std::chrono_literals;

namespace {
const Time kT0 = Time() + 1h;

// What the console shows right after `bytes` arrive at `at`.
std::string Feed(ConsoleStream& s, std::string_view bytes, Time at = kT0) {
  std::string out;
  s.Feed(bytes, at, out);
  return out;
}
std::string ReleaseAt(ConsoleStream& s, Time at) {
  std::string out;
  s.ReleaseDue(at, out);
  return out;
}
std::string Finish(ConsoleStream& s) {
  std::string out;
  s.Finish(out);
  return out;
}
}  // namespace

TEST_CASE("whole lines go out at once, each prefixed", "[console]") {
  ConsoleStream s("[rank0]: ");
  CHECK(Feed(s, "a\nb\n") == "[rank0]: a\n[rank0]: b\n");
  CHECK(Feed(s, "\n") == "[rank0]: \n");  // an empty line keeps its prefix
  CHECK_FALSE(s.held_until());
}

TEST_CASE("a line written in pieces within the hold goes out whole", "[console]") {
  ConsoleStream s("[rank1]: ");
  CHECK(Feed(s, "step 1 lo", kT0) == "");
  CHECK(s.held_until() == kT0 + ConsoleStream::kHold);
  CHECK(Feed(s, "ss=3\nnext", kT0 + 10ms) == "[rank1]: step 1 loss=3\n");
  // The new partial line's hold counts from its own first byte.
  CHECK(s.held_until() == kT0 + 10ms + ConsoleStream::kHold);
}

TEST_CASE("a partial line is released once held for the hold, then continues unprefixed",
          "[console]") {
  ConsoleStream s("[rank0]: ");
  CHECK(Feed(s, "loading", kT0) == "");
  CHECK(ReleaseAt(s, kT0 + ConsoleStream::kHold - 1ms) == "");
  CHECK(ReleaseAt(s, kT0 + ConsoleStream::kHold) == "[rank0]: loading");
  CHECK_FALSE(s.held_until());
  CHECK(s.line_open());
  // Its rest arrives later: no second prefix on the same line.
  CHECK(Feed(s, "... done\n", kT0 + 1s) == "... done\n");
  CHECK_FALSE(s.line_open());
  CHECK(Feed(s, "x\n") == "[rank0]: x\n");
}

TEST_CASE("a stream that never pauses is still shown every hold", "[console]") {
  ConsoleStream s("[rank0]: ");
  CHECK(Feed(s, "a", kT0) == "");
  CHECK(Feed(s, "b", kT0 + 30ms) == "");
  // The deadline stays that of the first held byte.
  CHECK(s.held_until() == kT0 + ConsoleStream::kHold);
  CHECK(ReleaseAt(s, kT0 + ConsoleStream::kHold) == "[rank0]: ab");
}

TEST_CASE("each carriage-return segment of a progress bar gets the prefix again", "[console]") {
  ConsoleStream s("[rank0]: ");
  std::string shown = Feed(s, "  0%|          | 0/10", kT0);
  shown += ReleaseAt(s, kT0 + 50ms);
  CHECK(shown == "[rank0]:   0%|          | 0/10");
  // A redraw goes out as it arrives: nothing is held for it.
  CHECK(Feed(s, "\r 40%|████      | 4/10", kT0 + 100ms) == "\r[rank0]:  40%|████      | 4/10");
  CHECK_FALSE(s.held_until());
  shown = Feed(s, "\r100%|██████████| 10/10\n", kT0 + 200ms);
  CHECK(shown == "\r[rank0]: 100%|██████████| 10/10\n");
  CHECK_FALSE(s.line_open());
}

TEST_CASE("a bar that starts with a carriage return is prefixed once per segment", "[console]") {
  ConsoleStream s("[rank2]: ");
  std::string shown = Feed(s, "\r 10%|#", kT0);
  shown += ReleaseAt(s, kT0 + 1s);
  CHECK(shown == "\r[rank2]:  10%|#");
  // A '\r' split from its segment by a read boundary still gets one prefix.
  shown = Feed(s, "\r", kT0 + 2s);
  shown += ReleaseAt(s, kT0 + 3s);
  shown += Feed(s, " 20%|##\r", kT0 + 4s);
  shown += ReleaseAt(s, kT0 + 5s);
  shown += Feed(s, "\r 30%|###", kT0 + 6s);
  shown += ReleaseAt(s, kT0 + 7s);
  CHECK(shown == "\r[rank2]:  20%|##\r\r[rank2]:  30%|###");
}

TEST_CASE("CRLF line ends add no prefix of their own", "[console]") {
  ConsoleStream s("[rank0]: ");
  CHECK(Feed(s, "a\r\nb\r\n") == "[rank0]: a\r\n[rank0]: b\r\n");
}

TEST_CASE("with no prefix the bytes pass through unchanged", "[console]") {
  ConsoleStream s("");
  std::string shown = Feed(s, "x\n\r 5%", kT0);
  shown += ReleaseAt(s, kT0 + 1s);
  shown += Feed(s, "\r 9%\n", kT0 + 2s);
  CHECK(shown == "x\n\r 5%\r 9%\n");
}

TEST_CASE("end of stream releases what is held and ends an open line", "[console]") {
  ConsoleStream s("[rank0]: ");
  CHECK(Feed(s, "no newline") == "");
  CHECK(Finish(s) == "[rank0]: no newline\n");
  CHECK(Finish(s) == "");
  ConsoleStream bar("[rank0]: ");
  CHECK(Feed(bar, "a\n") == "[rank0]: a\n");
  CHECK(Finish(bar) == "");  // nothing open, nothing added
}

TEST_CASE("a runaway partial line is released without waiting", "[console]") {
  ConsoleStream s("[rank0]: ");
  const std::string huge(ConsoleStream::kMaxHeld, 'x');
  CHECK(Feed(s, huge) == "[rank0]: " + huge);
  CHECK(Feed(s, "y") == "");
  CHECK(Feed(s, std::string(ConsoleStream::kMaxHeld, 'z')).size() == ConsoleStream::kMaxHeld + 1);
  CHECK_FALSE(s.held_until());
}

TEST_CASE("a new prefix applies from the next segment", "[console]") {
  ConsoleStream s("[rank3]: ");
  CHECK(Feed(s, "a\n") == "[rank3]: a\n");
  s.SetPrefix("[rank1]: ");
  CHECK(Feed(s, "b\n") == "[rank1]: b\n");
}

TEST_CASE("another worker's output ends an open line first, and the owner re-prefixes",
          "[console]") {
  ConsoleLine line;
  ConsoleStream rank0("[rank0]: ");
  ConsoleStream rank1("[rank1]: ");
  // Writes what `stream` releases as the console writer does.
  std::string console;
  auto put = [&](ConsoleStream& stream, std::string released) {
    if (released.empty()) return;
    line.BeforeWrite(stream, console);
    console += released;
    line.AfterWrite(stream);
  };
  put(rank0, Feed(rank0, "\r 40%|####", kT0));
  put(rank0, ReleaseAt(rank0, kT0 + 1s));
  put(rank0, Feed(rank0, "\r 50%|#####", kT0 + 2s));
  put(rank0, ReleaseAt(rank0, kT0 + 3s));
  put(rank1, Feed(rank1, "loss=2\n", kT0 + 4s));
  put(rank0, Feed(rank0, "\r 60%|######", kT0 + 5s));
  put(rank0, ReleaseAt(rank0, kT0 + 6s));
  put(rank0, Feed(rank0, " eta 1s\n", kT0 + 7s));
  put(rank1, Feed(rank1, "loss=1\n", kT0 + 8s));
  CHECK(console ==
        "\r[rank0]:  40%|####\r[rank0]:  50%|#####\n"
        "[rank1]: loss=2\n"
        "\r[rank0]:  60%|###### eta 1s\n"
        "[rank1]: loss=1\n");
}

TEST_CASE("a stream that goes away no longer holds the line", "[console]") {
  ConsoleLine line;
  std::string console;
  {
    ConsoleStream gone("[rank0]: ");
    std::string out;
    gone.Feed("partial", kT0, out);
    gone.ReleaseDue(kT0 + 1s, out);
    line.BeforeWrite(gone, console);
    console += out;
    line.AfterWrite(gone);
    line.Forget(gone);
  }
  ConsoleStream next("[rank1]: ");
  line.BeforeWrite(next, console);
  CHECK(console == "[rank0]: partial");
}

TEST_CASE("muster's own line ends a worker's open line first, and the worker re-prefixes",
          "[console]") {
  ConsoleLine line;
  ConsoleStream rank0("[rank0]: ");
  std::string console;
  std::string out;
  rank0.Feed("\r 40%|####", kT0, out);
  rank0.ReleaseDue(kT0 + 1s, out);
  line.BeforeWrite(rank0, console);
  console += std::exchange(out, "");
  line.AfterWrite(rank0);
  line.BeforeOwnLine(console);
  console += "muster: warning: a node was lost\n";
  line.BeforeOwnLine(console);  // the line is ended: nothing more to end
  rank0.Feed("\r 50%|#####\n", kT0 + 2s, out);
  line.BeforeWrite(rank0, console);
  console += out;
  CHECK(console ==
        "\r[rank0]:  40%|####\n"
        "muster: warning: a node was lost\n"
        "\r[rank0]:  50%|#####\n");
}

TEST_CASE("a line torch already marked with this rank gets no second mark", "[console]") {
  ConsoleStream s("[rank1]: ");
  CHECK(Feed(s, "[rank1]:[W reducer.cpp:1400] Warning\n") ==
        "[rank1]:[W reducer.cpp:1400] Warning\n");
  CHECK(Feed(s, "[rank1]: Traceback (most recent call last):\n") ==
        "[rank1]: Traceback (most recent call last):\n");
  // Another rank's mark, or the mark later in the line, is the script's text.
  CHECK(Feed(s, "[rank10]: x\n") == "[rank1]: [rank10]: x\n");
  CHECK(Feed(s, "[rank0]: y\n") == "[rank1]: [rank0]: y\n");
  CHECK(Feed(s, "z [rank1]: w\n") == "[rank1]: z [rank1]: w\n");
  ConsoleStream bare("");
  CHECK(Feed(bare, "[rank1]: a\n") == "[rank1]: a\n");
}
