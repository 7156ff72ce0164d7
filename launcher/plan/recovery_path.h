// RecoveryPath: how this node answers a worker's failure, the --recovery
// rule decided in one place. NodeMachine (decide/node_machine.h) holds it for
// the run; the dry run (dry_run.h) says it. Pure.
#pragma once

#include "launcher/plan/launch_options.h"

namespace muster {

// How this node answers a worker's failure: the --recovery rule, decided in
// this one place.
enum class RecoveryPath {
  kRestartAsked,        // --recovery restart
  kRestartAcrossNodes,  // a static run across nodes: nothing would pause the other nodes' workers
  kInPlace,             // in place when every worker announced it can, else restart every worker
};
// `nodes`: a static run's node count (elastic runs recover in place whatever
// their size).
RecoveryPath DecideRecovery(LaunchOptions::Recovery recovery, bool elastic, int nodes);

}  // namespace muster
