// Fuzzes what `muster status` prints from the daemon's status document
// (launcher/report/status_table.h): the table, and the --json form.
//
// Input: the document, as is.
//
// Invariants beyond "no crash, no uncaught exception, no sanitizer report":
//   - the table holds no control character but '\n', and no C1 control in
//     UTF-8 (U+0080..U+009F): nothing the daemon or a joiner sent can
//     drive the operator's terminal;
//   - the --json form is printable ASCII on one line;
//   - a document the table calls malformed or unreadable is one line.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "launcher/report/status_table.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using muster::fuzz::Printable;
  const std::string document(reinterpret_cast<const char*>(data), size);
  const std::string table = muster::FormatStatusTable(document);
  for (size_t i = 0; i < table.size(); ++i) {
    const auto byte = static_cast<unsigned char>(table[i]);
    FUZZ_CHECK(byte == '\n' || (byte >= 0x20 && byte != 0x7f),
               "a control byte in the table: " + Printable(table.substr(i, 40)));
    if (byte == 0xc2 && i + 1 < table.size()) {
      const auto next = static_cast<unsigned char>(table[i + 1]);
      FUZZ_CHECK(next > 0x9f, "a C1 control in the table: " + Printable(table.substr(i, 40)));
    }
  }
  if (table.starts_with("malformed") || table.starts_with("unreadable")) {
    FUZZ_CHECK(table.find('\n') == table.size() - 1, "a refusal of more than one line");
  }
  const std::string json = muster::StatusJsonForTerminal(document);
  for (const char c : json) {
    const auto byte = static_cast<unsigned char>(c);
    FUZZ_CHECK(byte >= 0x20 && byte < 0x7f,
               "a byte outside printable ASCII in --json: " + Printable(json.substr(0, 200)));
  }
  return 0;
}
