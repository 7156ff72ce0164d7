#include <catch2/catch.hpp>

#include "launcher/output/line_splitter.h"

using namespace muster;

namespace {
std::vector<std::string> SplitAll(const std::vector<std::string>& chunks, bool flush) {
  LineSplitter s;
  std::vector<std::string> lines;
  auto emit = [&](std::string_view l) { lines.emplace_back(l); };
  for (const auto& c : chunks) s.Feed(c, emit);
  if (flush) s.Flush(emit);
  return lines;
}
}  // namespace

TEST_CASE("lines split across reads come out whole", "[output]") {
  CHECK(SplitAll({"hel", "lo\nwor", "ld\n"}, false) ==
        std::vector<std::string>{"hello\n", "world\n"});
}

TEST_CASE("a partial last line is held until end of stream, then ends with a newline", "[output]") {
  CHECK(SplitAll({"a\nb"}, false) == std::vector<std::string>{"a\n"});
  CHECK(SplitAll({"a\nb"}, true) == std::vector<std::string>{"a\n", "b\n"});
}

TEST_CASE("a runaway line is cut into bounded pieces", "[output]") {
  const std::string huge(LineSplitter::kMaxLine * 2 + 10, 'x');
  auto lines = SplitAll({huge}, true);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].size() == LineSplitter::kMaxLine + 1);
  CHECK(lines[2] == std::string(10, 'x') + "\n");
}
