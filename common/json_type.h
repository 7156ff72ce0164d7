// JsonType: which JSON types a --config file key takes (a bit set), the
// column muster's flag table (launcher/cli/flag_table.h) and musterd's
// (rendezvous/daemon/daemon_flags.cc) share.
#pragma once

namespace muster {

enum JsonType : unsigned {
  kJsonString = 1,
  kJsonInteger = 2,
  kJsonNumber = 4,  // any number, integers included
  kJsonBool = 8,
  kJsonArray = 16,   // of strings/integers, joined with ','
  kJsonObject = 32,  // of scalars, joined as "k=v,k2=v2"
};

}  // namespace muster
