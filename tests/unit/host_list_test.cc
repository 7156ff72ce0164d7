#include <atomic>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "common/host_list.h"

// Bytes asked of operator new by this test binary, so that a test can show a
// call allocates (next to) nothing. Every form that a sanitizer runtime would
// otherwise supply is replaced too, so that no block is allocated by one
// runtime and freed by the other. Not inlined: GCC 12 otherwise sees free()
// meet operator new's memory in library code (-Wmismatched-new-delete).
namespace {
std::atomic<size_t> g_new_bytes{0};
}  // namespace

[[gnu::noinline]] void* operator new(size_t size, const std::nothrow_t&) noexcept {
  g_new_bytes.fetch_add(size, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
[[gnu::noinline]] void* operator new(size_t size) {
  if (void* p = operator new(size, std::nothrow)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace muster {
namespace {

// One line of host_list_cases.txt (its format is described at its top).
struct Case {
  int line = 0;
  std::string list;
  std::string expected;
  std::string flag;  // empty: scontrol agrees
};

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t begin = 0;
  for (;;) {
    const size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

std::vector<Case> ReadCases() {
  std::ifstream in(MUSTER_HOST_LIST_CASES);
  INFO("reading " << MUSTER_HOST_LIST_CASES);
  REQUIRE(in.good());
  std::vector<Case> cases;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.empty() || text[0] == '#') continue;
    INFO("host_list_cases.txt:" << line << ": " << text);
    const size_t close = text.find('\'', 1);
    REQUIRE(text[0] == '\'');
    REQUIRE(close != std::string::npos);
    REQUIRE(text.substr(close + 1, 1) == "\t");
    const auto fields = Split(text.substr(close + 2), '\t');
    REQUIRE((fields.size() == 1 || fields.size() == 3));
    Case row{line, text.substr(1, close - 1), fields[0], fields.size() == 3 ? fields[1] : ""};
    REQUIRE((row.flag.empty() || row.flag == "suffix" || row.flag == "stricter" ||
             row.flag == "order"));
    cases.push_back(row);
  }
  return cases;
}

constexpr const char* kErrorMark = "!error: ";

bool IsErrorRow(const Case& row) { return row.expected.rfind(kErrorMark, 0) == 0; }

TEST_CASE("every list of the case table expands to its hosts or its error") {
  for (const Case& row : ReadCases()) {
    INFO("host_list_cases.txt:" << row.line << ": '" << row.list << "'");
    const auto hosts = ExpandHostList(row.list);
    const auto first = FirstHostOfList(row.list);
    if (IsErrorRow(row)) {
      const std::string reason = row.expected.substr(std::string(kErrorMark).size());
      if (hosts.ok()) {
        FAIL_CHECK("expanded to " << hosts->size() << " hosts, expected an error: " << reason);
        continue;
      }
      const std::string& message = hosts.status().message();
      CHECK(hosts.status().IsInvalidArgument());
      CHECK(message.rfind("'" + row.list + "' is not a host list: ", 0) == 0);
      CHECK(message.find(reason) != std::string::npos);
      CHECK(message.find('\n') == std::string::npos);
      CHECK_FALSE(first.ok());
      CHECK(first.status().message() == message);
    } else {
      if (!hosts.ok()) {
        FAIL_CHECK(hosts.status().message());
        continue;
      }
      CHECK(*hosts == Split(row.expected, ' '));
      REQUIRE(first.ok());
      CHECK(*first == hosts->front());
    }
  }
}

TEST_CASE("the case table covers hosts, errors and each way of differing from scontrol") {
  const auto cases = ReadCases();
  CHECK(cases.size() >= 30);
  std::set<std::string> flags;
  size_t errors = 0;
  for (const Case& row : cases) {
    flags.insert(row.flag);
    errors += IsErrorRow(row) ? 1 : 0;
  }
  CHECK(flags == std::set<std::string>{"", "order", "stricter", "suffix"});
  CHECK(errors >= 10);
  CHECK(cases.size() - errors >= 10);
}

std::string ErrorOf(std::string_view list) {
  const auto hosts = ExpandHostList(list);
  REQUIRE_FALSE(hosts.ok());
  CHECK(hosts.status().IsInvalidArgument());
  return hosts.status().message();
}

TEST_CASE("a list of more hosts than the limit is refused before anything is allocated") {
  const std::string over = "more than 1000000 hosts (muster's limit)";
  CHECK(ErrorOf("n[1-1000001]") == "'n[1-1000001]' is not a host list: it names " + over);
  CHECK_THAT(ErrorOf("a[1-1000]b[1-1001]"), Catch::Contains(over));       // a product of groups
  CHECK_THAT(ErrorOf("a[1-600000],b[1-400001]"), Catch::Contains(over));  // a sum of items
  CHECK_THAT(ErrorOf("n[1-500000,1-500001]"), Catch::Contains(over));     // a sum of ranges

  const size_t before = g_new_bytes.load();
  const auto huge = ExpandHostList("n[0-18446744073709551615]");
  const size_t allocated = g_new_bytes.load() - before;
  REQUIRE_FALSE(huge.ok());
  CHECK_THAT(huge.status().message(), Catch::Contains(over));
  CHECK(allocated < 4096);  // the message and the parse, no hosts

  const auto at_limit = ExpandHostList("a[1-1000]b[1-1000]");
  REQUIRE(at_limit.ok());
  CHECK(at_limit->size() == kMaxHostListHosts);
  CHECK(at_limit->back() == "a1000b1000");
}

TEST_CASE("the first host of a huge range is found without expanding it") {
  size_t before = g_new_bytes.load();
  const auto first = FirstHostOfList("n[000001-999999],m[1-1]");
  const size_t first_bytes = g_new_bytes.load() - before;
  REQUIRE(first.ok());
  CHECK(*first == "n000001");
  CHECK(first_bytes < 4096);

  // The counter does see an expansion: a hundredth of that range is more.
  before = g_new_bytes.load();
  const auto some = ExpandHostList("n[1-10000]");
  REQUIRE(some.ok());
  CHECK(g_new_bytes.load() - before >= 10000 * sizeof(std::string));
}

TEST_CASE("tabs separate hosts and other control bytes are an error on one line") {
  const auto hosts = ExpandHostList("n1\tn[2-3]");
  REQUIRE(hosts.ok());
  CHECK(*hosts == std::vector<std::string>{"n1", "n2", "n3"});
  CHECK(ErrorOf("n1\nn2") == "'n1\\x0an2' is not a host list: control byte '\\x0a' at offset 2");
  CHECK(ErrorOf("n[1-2]\r") ==
        "'n[1-2]\\x0d' is not a host list: control byte '\\x0d' at offset 6");
}

TEST_CASE("a host name longer than 255 bytes is an error") {
  const std::string longest(255, 'a');
  const auto ok = FirstHostOfList(longest);
  REQUIRE(ok.ok());
  CHECK(*ok == longest);
  CHECK_THAT(ErrorOf(longest + "b"), Catch::Contains("longer than 255 bytes"));
  // Zero padding counts: each host would be 300 digits.
  CHECK_THAT(ErrorOf("n[" + std::string(299, '0') + "1-999999]"),
             Catch::Contains("longer than 255 bytes"));
}

}  // namespace
}  // namespace muster
