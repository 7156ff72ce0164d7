#include "store/request_handler.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "store/tcpstore_codec.h"

namespace muster::store {
namespace {

HandlerOutcome Close(std::string reason) { return {{}, true, std::move(reason)}; }

// Keys can be binary; logs get a bounded, printable rendering.
std::string Printable(const std::string& key) {
  std::string out;
  for (char c : key.substr(0, 200)) {
    out.push_back(c >= 0x20 && c < 0x7f && c != '\'' ? c : '?');
  }
  if (key.size() > 200) out += "...";
  return out;
}

// WAIT and BARRIER may leave a waiter behind: a connection holds a bounded
// number of them.
Status WaitRoom(const KeyValueStore& store, KeyValueStore::Owner owner,
                const HandlerLimits& limits) {
  const size_t waits = store.PendingWaits(owner);
  if (waits < limits.max_pending_waits) return Status::Ok();
  return Status::InvalidArgument("too many pending waits waits=" + std::to_string(waits));
}

// Whether the store may grow by `growth` (one request's writes together).
// Keys and bytes held by pending waiters count as stored ones.
Status Room(const KeyValueStore& store, const HandlerLimits& limits,
            const KeyValueStore::Growth& growth) {
  const size_t keys = store.NumEntries() + store.WaitedKeys();
  const size_t bytes = store.Bytes() + store.WaitedKeyBytes();
  if (growth.keys > 0 && keys + growth.keys > limits.max_keys) {
    return Status::InvalidArgument("store key limit reached keys=" + std::to_string(keys) +
                                   " max_keys=" + std::to_string(limits.max_keys) +
                                   " (--store-max-keys)");
  }
  if (growth.bytes > 0 && bytes + static_cast<size_t>(growth.bytes) > limits.max_bytes) {
    return Status::InvalidArgument("store size limit reached bytes=" + std::to_string(bytes) +
                                   " request_adds=" + std::to_string(growth.bytes) + " max_bytes=" +
                                   std::to_string(limits.max_bytes) + " (--store-max-bytes)");
  }
  return Status::Ok();
}

// A WAIT (or a blocking pop) may register a waiter on every key it names:
// their names count against the store's bounds while they wait.
Status RoomToWait(const KeyValueStore& store, const HandlerLimits& limits,
                  const std::vector<std::string>& keys) {
  KeyValueStore::Growth growth;
  growth.keys = keys.size();
  for (const auto& key : keys) growth.bytes += static_cast<int64_t>(key.size());
  return Room(store, limits, growth);
}

// Every reply is sized before it is built: one that does not fit the room
// the connection has left (HandlerLimits::reply_room) is never allocated.
Status RoomToReply(const HandlerLimits& limits, size_t reply_bytes) {
  if (reply_bytes <= limits.reply_room) return Status::Ok();
  return Status::InvalidArgument("reply too large bytes=" + std::to_string(reply_bytes) +
                                 " room=" + std::to_string(limits.reply_room) + " " +
                                 std::string(limits.reply_bound));
}

// The wire size of one EncodeBytes'd value.
constexpr size_t EncodedSize(size_t value_bytes) { return 8 + value_bytes; }

Status RoomFor(const KeyValueStore& store, const HandlerLimits& limits, const std::string& key,
               size_t value_bytes, KeyValueStore::Write how) {
  return Room(store, limits, store.GrowthOf(key, value_bytes, how));
}

// An ADD or BARRIER writes a decimal int64: at most 20 bytes.
constexpr size_t kCounterBytes = 20;

}  // namespace

HandlerOutcome HandleRequest(KeyValueStore& store, KeyValueStore::Owner owner, Dialect dialect,
                             Request request, const HandlerLimits& limits) {
  if (dialect == Dialect::kLegacy && store.PendingWaits(owner) > 0) {
    store.CancelWaits(owner);  // see the header: the client abandoned its WAIT
  }

  HandlerOutcome out;
  switch (request.op) {
    case Op::kValidate:
      if (request.word != kValidationMagic) {
        return Close("bad validation magic magic=" + std::to_string(request.word));
      }
      break;
    case Op::kPing:
      EncodeUint32(request.word, &out.reply);
      break;
    case Op::kSet:
      if (Status s = RoomFor(store, limits, request.keys[0], request.values[0].size(),
                             KeyValueStore::Write::kReplace);
          !s.ok())
        return Close(s.message());
      store.Set(request.keys[0], std::move(request.values[0]));
      break;
    case Op::kCompareSet:
      if (Status s = RoomFor(store, limits, request.keys[0], request.values[1].size(),
                             KeyValueStore::Write::kReplace);
          !s.ok())
        return Close(s.message());
      // The reply is the desired value or the expected one.
      if (Status s = RoomToReply(
              limits, EncodedSize(std::max(request.values[0].size(), request.values[1].size())));
          !s.ok())
        return Close(s.message());
      EncodeBytes(
          store.CompareSet(request.keys[0], request.values[0], std::move(request.values[1])),
          &out.reply);
      break;
    case Op::kGet: {
      // torch clients WAIT before GET, so a missing key is a client bug; torch's
      // server drops the connection here too.
      const std::string* value = store.Get(request.keys[0]);
      if (value == nullptr)
        return Close("GET of a missing key key='" + Printable(request.keys[0]) + "'");
      if (Status s = RoomToReply(limits, EncodedSize(value->size())); !s.ok())
        return Close(s.message());
      EncodeBytes(*value, &out.reply);
      break;
    }
    case Op::kAdd: {
      if (Status s = RoomFor(store, limits, request.keys[0], kCounterBytes,
                             KeyValueStore::Write::kReplace);
          !s.ok())
        return Close(s.message());
      Result<int64_t> sum = store.Add(request.keys[0], request.delta);
      // Keys can be binary and megabytes long: the log gets a bounded rendering.
      if (!sum.ok())
        return Close(sum.status().message() + " key='" + Printable(request.keys[0]) + "'");
      EncodeInt64(*sum, &out.reply);
      break;
    }
    case Op::kCheck:
      EncodeByte(store.Check(request.keys) ? kCheckReady : kCheckNotReady, &out.reply);
      break;
    case Op::kWait:
      if (Status s = WaitRoom(store, owner, limits); !s.ok()) return Close(s.message());
      if (Status s = RoomToWait(store, limits, request.keys); !s.ok()) return Close(s.message());
      if (store.Wait(owner, request.keys)) EncodeByte(kStopWaiting, &out.reply);
      break;
    case Op::kBarrier: {
      if (Status s = WaitRoom(store, owner, limits); !s.ok()) return Close(s.message());
      if (Status s = RoomToWait(store, limits, request.keys); !s.ok()) return Close(s.message());
      if (Status s = RoomFor(store, limits, request.keys[0], kCounterBytes,
                             KeyValueStore::Write::kReplace);
          !s.ok())
        return Close(s.message());
      Result<bool> done = store.Barrier(owner, request.keys[0], request.delta);
      if (!done.ok())
        return Close(done.status().message() + " key='" + Printable(request.keys[0]) + "'");
      if (*done) EncodeByte(kStopWaiting, &out.reply);
      break;
    }
    case Op::kQueuePush:
      if (Status s = RoomFor(store, limits, request.keys[0], request.values[0].size(),
                             KeyValueStore::Write::kQueuePush);
          !s.ok())
        return Close(s.message());
      store.QueuePush(request.keys[0], std::move(request.values[0]));
      break;
    case Op::kQueuePop: {
      // Sized from the oldest item before it is taken: a refused pop loses
      // nothing.
      const std::string* oldest = store.QueueFront(request.keys[0]);
      if (Status s = RoomToReply(limits, 8 + (oldest ? EncodedSize(oldest->size()) : 0)); !s.ok())
        return Close(s.message());
      KeyValueStore::Popped popped = store.QueuePop(request.keys[0]);
      EncodeInt64(popped.length_before, &out.reply);
      if (popped.value) EncodeBytes(*popped.value, &out.reply);
      break;
    }
    case Op::kQueueLen:
      EncodeInt64(store.QueueLen(request.keys[0]), &out.reply);
      break;
    case Op::kListKeys: {
      const std::vector<std::string> keys = store.ListKeys();
      size_t bytes = 8;
      for (const auto& key : keys) bytes += 8 + key.size();
      // Sized before the reply is encoded: the keys may add up to gigabytes.
      if (bytes > limits.max_list_keys_reply_bytes) {
        return Close("LIST_KEYS reply too large bytes=" + std::to_string(bytes) +
                     " max=" + std::to_string(limits.max_list_keys_reply_bytes));
      }
      if (Status s = RoomToReply(limits, bytes); !s.ok()) return Close(s.message());
      out.reply.reserve(bytes);
      EncodeInt64(static_cast<int64_t>(keys.size()), &out.reply);
      for (const auto& key : keys) EncodeBytes(key, &out.reply);
      break;
    }
    case Op::kGetNumKeys:
      EncodeInt64(static_cast<int64_t>(store.NumKeys()), &out.reply);
      break;
    case Op::kWatchKey:
      // Only torch 1.13's C++ API can issue it (Python has no watch_key) and
      // no torch.distributed code path uses it.
      return Close("unsupported query");
    case Op::kDeleteKey:
      EncodeInt64(store.Delete(request.keys[0]) ? 1 : 0, &out.reply);
      break;
    case Op::kAppend:
      if (Status s = RoomFor(store, limits, request.keys[0], request.values[0].size(),
                             KeyValueStore::Write::kAppend);
          !s.ok())
        return Close(s.message());
      store.Append(request.keys[0], request.values[0]);
      break;
    case Op::kMultiGet: {
      // Summed first: one short request may name a large key thousands of
      // times, asking for a reply of terabytes.
      std::vector<const std::string*> values;
      values.reserve(request.keys.size());
      size_t bytes = 0;
      for (const auto& key : request.keys) {
        const std::string* value = store.Get(key);
        if (value == nullptr)
          return Close("MULTI_GET of a missing key key='" + Printable(key) + "'");
        values.push_back(value);
        bytes += EncodedSize(value->size());
        if (bytes > limits.reply_room) break;  // no need to add up the rest
      }
      if (Status s = RoomToReply(limits, bytes); !s.ok()) return Close(s.message());
      out.reply.reserve(bytes);
      for (const std::string* value : values) EncodeBytes(*value, &out.reply);
      break;
    }
    case Op::kMultiSet: {
      // Refused whole: each key's growth against the store as it is now (a
      // key listed twice counts twice, erring on the side of refusing).
      KeyValueStore::Growth total;
      for (size_t i = 0; i < request.keys.size(); ++i) {
        const auto growth = store.GrowthOf(request.keys[i], request.values[i].size(),
                                           KeyValueStore::Write::kReplace);
        total.keys += growth.keys;
        total.bytes += growth.bytes;
      }
      if (Status s = Room(store, limits, total); !s.ok()) return Close(s.message());
      for (size_t i = 0; i < request.keys.size(); ++i) {
        store.Set(request.keys[i], std::move(request.values[i]));
      }
      break;
    }
    case Op::kCancelWait:
      store.CancelWaits(owner);
      EncodeByte(kWaitCanceled, &out.reply);
      break;
  }
  return out;
}

}  // namespace muster::store
