#include "launcher/plan/recovery_path.h"

namespace muster {

RecoveryPath DecideRecovery(LaunchOptions::Recovery recovery, bool elastic, int nodes) {
  if (recovery == LaunchOptions::Recovery::kRestart) return RecoveryPath::kRestartAsked;
  // Static runs across nodes restart each node on its own (as torchrun's
  // static backend): nothing would pause the other nodes' workers.
  if (!elastic && nodes != 1) return RecoveryPath::kRestartAcrossNodes;
  return RecoveryPath::kInPlace;
}

}  // namespace muster
