#include "common/host_list.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include "common/decimal.h"

namespace muster {
namespace {

// A host name longer than DNS allows can never be reached. Bounding it also
// bounds the memory per host (a range start written with 10,000 zeros would
// otherwise make each of a million hosts 10 KB) and the pieces per item, so
// the recursion in ExpandItem stays shallow.
constexpr size_t kMaxHostNameLength = 255;

// Host counts saturate just above the limit: past it only "too many" matters,
// and saturating keeps sums and products of counts from overflowing.
constexpr uint64_t kOverLimit = kMaxHostListHosts + 1;

uint64_t AddCounts(uint64_t a, uint64_t b) { return std::min(a + b, kOverLimit); }
uint64_t MultiplyCounts(uint64_t a, uint64_t b) { return std::min(a * b, kOverLimit); }

struct Range {
  uint64_t first = 0;
  uint64_t last = 0;
  size_t width = 0;  // length of `first` as written: every number is zero-padded to it

  uint64_t Hosts() const {
    return last - first >= kMaxHostListHosts ? kOverLimit : last - first + 1;
  }
};

// Literal text when `ranges` is empty, else a bracket group.
struct Piece {
  std::string_view text;
  std::vector<Range> ranges;
};

using Item = std::vector<Piece>;  // one host expression: "rack[1-2]-n[3,5]"

struct ParsedList {
  std::vector<Item> items;
  size_t hosts = 0;  // <= kMaxHostListHosts
};

bool IsSeparator(char c) { return c == ',' || c == ' ' || c == '\t'; }
bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// `text` in single quotes, control bytes written as \xNN so that an error
// message stays one line whatever the list holds.
std::string Quoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (IsControl(c)) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

size_t DigitCount(uint64_t value) { return std::to_string(value).size(); }

// One left-to-right pass over the list that validates all of it and counts
// its hosts without producing any.
class Parser {
 public:
  explicit Parser(std::string_view list) : list_(list) {}

  Result<ParsedList> Parse() {
    ParsedList parsed;
    uint64_t hosts = 0;
    while (pos_ < list_.size()) {
      if (IsSeparator(list_[pos_])) {
        ++pos_;  // runs of separators are one separator: "x,,y" is x y
        continue;
      }
      Item item;
      uint64_t item_hosts = 1;
      if (Status status = ParseItem(item, item_hosts); !status.ok()) return status;
      hosts = AddCounts(hosts, item_hosts);
      parsed.items.push_back(std::move(item));
    }
    if (parsed.items.empty()) return Error("it names no hosts");
    if (hosts > kMaxHostListHosts) {
      return Error("it names more than " + std::to_string(kMaxHostListHosts) +
                   " hosts (muster's limit)");
    }
    parsed.hosts = static_cast<size_t>(hosts);
    return parsed;
  }

 private:
  Status Error(const std::string& reason) const {
    return Status::InvalidArgument(Quoted(list_) + " is not a host list: " + reason);
  }

  // Text and bracket groups up to the next separator (commas inside brackets
  // belong to the group).
  Status ParseItem(Item& item, uint64_t& hosts) {
    size_t longest_name = 0;
    while (pos_ < list_.size() && !IsSeparator(list_[pos_])) {
      const char c = list_[pos_];
      if (c == '[') {
        Piece group;
        uint64_t group_hosts = 0;
        size_t group_width = 0;
        if (Status status = ParseGroup(group, group_hosts, group_width); !status.ok()) {
          return status;
        }
        hosts = MultiplyCounts(hosts, group_hosts);
        longest_name += group_width;
        item.push_back(std::move(group));
      } else if (c == ']') {
        return Error("']' at offset " + std::to_string(pos_) + " has no '[' before it");
      } else if (IsControl(c)) {
        return Error("control byte " + Quoted(list_.substr(pos_, 1)) + " at offset " +
                     std::to_string(pos_));
      } else {
        const size_t begin = pos_;
        while (pos_ < list_.size() && !IsSeparator(list_[pos_]) && list_[pos_] != '[' &&
               list_[pos_] != ']' && !IsControl(list_[pos_])) {
          ++pos_;
        }
        longest_name += pos_ - begin;
        item.push_back(Piece{list_.substr(begin, pos_ - begin), {}});
      }
      if (longest_name > kMaxHostNameLength) {
        return Error("its host names would be longer than " + std::to_string(kMaxHostNameLength) +
                     " bytes");
      }
    }
    return Status::Ok();
  }

  // "[01-04,7]" at pos_: its ranges, how many numbers they hold, and the
  // widest number they write.
  Status ParseGroup(Piece& group, uint64_t& hosts, size_t& width) {
    const size_t open = pos_;
    const size_t close = list_.find_first_of("[]", open + 1);
    if (close == std::string_view::npos) {
      return Error("'[' at offset " + std::to_string(open) + " is never closed");
    }
    if (list_[close] == '[') {
      return Error("'[' at offset " + std::to_string(close) + " is inside the '[' at offset " +
                   std::to_string(open));
    }
    const std::string_view text = list_.substr(open, close - open + 1);
    const std::string_view body = text.substr(1, text.size() - 2);
    if (body.empty()) return Error("brackets at offset " + std::to_string(open) + " are empty");
    size_t begin = 0;
    for (;;) {
      const size_t comma = body.find(',', begin);
      Range range;
      const std::string_view range_text =
          body.substr(begin, comma == std::string_view::npos ? body.size() - begin : comma - begin);
      if (Status status = ParseRange(text, range_text, range); !status.ok()) return status;
      hosts = AddCounts(hosts, range.Hosts());
      width = std::max({width, range.width, DigitCount(range.last)});
      group.ranges.push_back(range);
      if (comma == std::string_view::npos) break;
      begin = comma + 1;
    }
    pos_ = close + 1;
    return Status::Ok();
  }

  // "N" or "N-M" inside the group `group_text` ("[...]", for messages).
  Status ParseRange(std::string_view group_text, std::string_view text, Range& range) const {
    if (text.empty()) return Error("empty range in " + Quoted(group_text));
    // Every byte is checked before the numbers are read, so that a sign or a
    // space is named rather than skipped (SLURM's strtoul reads "+1" as 1).
    for (size_t i = 0; i < text.size(); ++i) {
      if (!IsDigit(text[i]) && text[i] != '-') {
        return Error(Quoted(text.substr(i, 1)) + " in range " + Quoted(text) + " is not a digit");
      }
    }
    const size_t dash = text.find('-');
    if (dash != std::string_view::npos && text.find('-', dash + 1) != std::string_view::npos) {
      return Error("range " + Quoted(text) + " has more than one '-'");
    }
    const std::string_view first = text.substr(0, dash);
    const std::string_view last = dash == std::string_view::npos ? first : text.substr(dash + 1);
    if (first.empty()) return Error("range " + Quoted(text) + " has no start");
    if (last.empty()) return Error("range " + Quoted(text) + " has no end");
    const auto first_value = ParseDecimal(first);
    if (!first_value) return TooLarge(first, text);
    const auto last_value = ParseDecimal(last);
    if (!last_value) return TooLarge(last, text);
    if (*last_value < *first_value) return Error("range " + Quoted(text) + " ends below its start");
    range = Range{*first_value, *last_value, first.size()};
    return Status::Ok();
  }

  Status TooLarge(std::string_view digits, std::string_view range_text) const {
    return Error("number " + Quoted(digits) + " in range " + Quoted(range_text) +
                 " is too large (at most " + std::to_string(std::numeric_limits<uint64_t>::max()) +
                 ")");
  }

  std::string_view list_;
  size_t pos_ = 0;
};

void AppendNumber(std::string& out, uint64_t value, size_t width) {
  const std::string digits = std::to_string(value);
  if (digits.size() < width) out.append(width - digits.size(), '0');
  out += digits;
}

// Appends to `hosts` every host of item[index..], each after `prefix`; the
// leftmost group varies slowest. Depth is at most the item's piece count,
// which kMaxHostNameLength bounds.
void ExpandItem(const Item& item, size_t index, std::string& prefix,
                std::vector<std::string>& hosts) {
  if (index == item.size()) {
    hosts.push_back(prefix);
    return;
  }
  const Piece& piece = item[index];
  const size_t kept = prefix.size();
  if (piece.ranges.empty()) {
    prefix += piece.text;
    ExpandItem(item, index + 1, prefix, hosts);
  } else {
    for (const Range& range : piece.ranges) {
      // Stops at `last` before incrementing: `last` may be 2^64 - 1.
      for (uint64_t value = range.first;; ++value) {
        AppendNumber(prefix, value, range.width);
        ExpandItem(item, index + 1, prefix, hosts);
        prefix.resize(kept);
        if (value == range.last) break;
      }
    }
  }
  prefix.resize(kept);
}

}  // namespace

Result<std::vector<std::string>> ExpandHostList(std::string_view list) {
  auto parsed = Parser(list).Parse();
  if (!parsed.ok()) return parsed.status();
  std::vector<std::string> hosts;
  hosts.reserve(parsed->hosts);  // within kMaxHostListHosts: checked by Parse
  std::string prefix;
  for (const Item& item : parsed->items) ExpandItem(item, 0, prefix, hosts);
  return hosts;
}

Result<std::string> FirstHostOfList(std::string_view list) {
  auto parsed = Parser(list).Parse();
  if (!parsed.ok()) return parsed.status();
  // Every range holds at least one number, so the first item's first host is
  // each group at the start of its first range.
  std::string host;
  for (const Piece& piece : parsed->items.front()) {
    if (piece.ranges.empty()) {
      host += piece.text;
    } else {
      AppendNumber(host, piece.ranges.front().first, piece.ranges.front().width);
    }
  }
  return host;
}

}  // namespace muster
