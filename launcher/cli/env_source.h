// The environment as a source of flag values: PET_<FLAG> for every flag that
// may come from the environment (torchrun's convention), e.g.
// PET_NPROC_PER_NODE=4, PET_STANDALONE=1.
#pragma once

#include <optional>
#include <string>

#include "common/env_lookup.h"
#include "launcher/cli/raw_settings.h"

namespace muster::cli {

using muster::SystemEnv;

// The PET_ values that are set. An empty value counts as unset, so
// `PET_NNODES= muster ...` means "no setting", not "bad value ''".
// Origins are the variable names. Never fails: values are checked later.
RawSettings ReadEnvSettings(const EnvLookup& env);

}  // namespace muster::cli
