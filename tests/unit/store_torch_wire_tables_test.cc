// Every torch version's bytes, from store_torch_wire_tables.txt (its header
// says how to read a row and where each section comes from), decoded and
// answered by muster's codec and request handler exactly as a store session
// does it: one decoder per connection, the handler on one shared store, and
// woken waiters answered with STOP_WAITING after each request.
#include <catch2/catch.hpp>

#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "store/request_handler.h"
#include "store/tcpstore_codec.h"
#include "store_wire_bytes.h"

#ifndef MUSTER_STORE_WIRE_TABLES
#error "MUSTER_STORE_WIRE_TABLES must name store_torch_wire_tables.txt"
#endif

namespace muster::store {
namespace {

using testing::Hex;

struct Row {
  int line = 0;
  std::string conn;
  std::string request;  // hex
  std::string reply;    // "-", "close", or hex with "x:" switches to connection x
  std::string operation;
  std::string source;
};

// "TCPStore.cpp:1026" somewhere in `source`: a file of torch and a line.
bool CitesFileAndLine(const std::string& source) {
  for (const char* ext : {".cpp:", ".hpp:"}) {
    for (size_t at = source.find(ext); at != std::string::npos; at = source.find(ext, at + 1)) {
      const size_t digit = at + 5;
      if (digit < source.size() && std::isdigit(static_cast<unsigned char>(source[digit]))) {
        return true;
      }
    }
  }
  return false;
}

std::string Trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// Section name -> rows, in file order.
std::map<std::string, std::vector<Row>> ReadTables() {
  std::ifstream in(MUSTER_STORE_WIRE_TABLES);
  REQUIRE(in.good());
  std::map<std::string, std::vector<Row>> tables;
  std::string section;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    text = Trim(text);
    if (text.empty() || text[0] == '#') continue;
    if (text.front() == '[' && text.back() == ']') {
      section = text.substr(1, text.size() - 2);
      continue;
    }
    std::vector<std::string> fields;
    std::stringstream split(text);
    for (std::string field; std::getline(split, field, '|');) fields.push_back(Trim(field));
    INFO("line " << line << ": " << text);
    REQUIRE(fields.size() == 5);
    REQUIRE_FALSE(section.empty());
    tables[section].push_back({line, fields[0], fields[1], fields[2], fields[3], fields[4]});
  }
  return tables;
}

// What each connection must have received after a row: the row's own
// connection gets the leading bytes, "x:HEX" names another one.
std::map<std::string, std::string> ExpectedReplies(const Row& row) {
  std::map<std::string, std::string> want;
  if (row.reply == "-" || row.reply == "close") return want;
  std::string conn = row.conn;
  std::stringstream tokens(row.reply);
  for (std::string token; tokens >> token;) {
    if (const auto colon = token.find(':'); colon != std::string::npos) {
      conn = token.substr(0, colon);
      token = token.substr(colon + 1);
    }
    want[conn] += Hex(token);
  }
  return want;
}

// One torch client connection as the store session drives it.
struct Connection {
  KeyValueStore::Owner owner = 0;
  RequestDecoder decoder;
  std::string received;
  bool closed = false;
  std::string close_reason;
};

class Replay {
 public:
  void Run(const Row& row) {
    Connection& c = Connect(row.conn);
    REQUIRE_FALSE(c.closed);
    c.decoder.Feed(Hex(row.request));
    for (;;) {
      // A row is all the client writes before it waits: it is quiet now.
      StreamFacts facts{.wait_pending = store_.PendingWaits(c.owner) > 0, .quiet = true};
      DecodeResult decoded = c.decoder.Next(facts);
      if (decoded.state == DecodeResult::kNeedMore) break;
      if (decoded.state == DecodeResult::kError) {
        Close(c, decoded.error);
        break;
      }
      HandlerOutcome outcome =
          HandleRequest(store_, c.owner, c.decoder.dialect(), std::move(decoded.request));
      if (outcome.close) {
        Close(c, outcome.close_reason);
      } else {
        c.received += outcome.reply;
      }
      for (KeyValueStore::Owner owner : store_.TakeReadyWaiters()) {
        for (auto& [name, other] : connections_) {
          if (other.owner == owner && !other.closed) other.received.push_back(kStopWaiting);
        }
      }
      if (c.closed) break;
    }
    CHECK(c.decoder.buffered_bytes() == 0);
    CHECK(c.closed == (row.reply == "close"));
    const auto want = ExpectedReplies(row);
    for (auto& [name, conn] : connections_) {
      INFO("connection " << name);
      const auto it = want.find(name);
      CHECK(conn.received == (it == want.end() ? std::string() : it->second));
      conn.received.clear();
    }
  }

  const std::string& close_reason(const std::string& conn) { return Connect(conn).close_reason; }

 private:
  Connection& Connect(const std::string& name) {
    auto [it, added] = connections_.try_emplace(name);
    if (added) it->second.owner = connections_.size();
    return it->second;
  }

  void Close(Connection& c, const std::string& reason) {
    c.closed = true;
    c.close_reason = reason;
    store_.CancelWaits(c.owner);
  }

  KeyValueStore store_;
  std::map<std::string, Connection> connections_;
};

TEST_CASE("every torch version's bytes are answered as its client expects", "[store][tables]") {
  const auto tables = ReadTables();
  const std::set<std::string> versions = {"1.13", "2.1", "2.6", "2.14", "newest"};
  for (const std::string& version : versions) {
    INFO("missing table for torch " << version);
    CHECK(tables.contains(version));
  }
  for (const auto& [version, rows] : tables) {
    SECTION("torch " + version) {
      Replay replay;
      for (const Row& row : rows) {
        INFO("torch " << version << ", line " << row.line << ": " << row.operation);
        // Every row says where in torch's source it comes from.
        CHECK(CitesFileAndLine(row.source));
        replay.Run(row);
      }
    }
  }
}

TEST_CASE("the ambiguous rows close with a reason naming the byte and the dialects",
          "[store][tables]") {
  const auto tables = ReadTables();
  for (const auto& [version, rows] : tables) {
    Replay replay;
    for (const Row& row : rows) {
      replay.Run(row);
      if (row.reply != "close") continue;
      const std::string& reason = replay.close_reason(row.conn);
      INFO("torch " << version << ", line " << row.line << ": " << reason);
      CHECK(reason.find("query") != std::string::npos);
      if (row.operation.find("ambiguous") != std::string::npos) {
        CHECK(reason.starts_with("query byte 7 is ambiguous before the dialect is known"));
      }
    }
  }
}

}  // namespace
}  // namespace muster::store
