// Which command a command line belongs to: plain `muster` (torchrun's
// interface) or `muster launch` (torch.distributed.launch's: it also passes
// each worker its local rank as a --local_rank=N argument).
#pragma once

namespace muster::cli {

enum class CommandMode {
  kRun,     // muster [options] SCRIPT [ARGS...]
  kLaunch,  // muster launch [options] [--use-env] SCRIPT [ARGS...]
};

}  // namespace muster::cli
