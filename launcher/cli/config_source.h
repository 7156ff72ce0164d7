// The --config file as a source of flag values. The file is one JSON object
// whose keys are flag names without dashes, in either spelling
// ("nproc_per_node" or "nproc-per-node"):
//
//   {"nnodes": "1:4", "nproc_per_node": 8, "rdzv_backend": "muster",
//    "rdzv_conf": {"join_timeout": 900}, "gpus": [0, 1], "standalone": false}
//
// Each key takes the JSON types its flag lists in the flag table (numbers
// where the flag is numeric, true/false for switches, arrays for lists,
// objects for --rdzv-conf, strings everywhere a value is taken). Values are
// turned into command-line text here and parsed later like any other source.
// configs/schema.json describes the same format for editors.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "launcher/cli/raw_settings.h"

namespace muster::cli {

// Reads and converts the file at `path`. Origins are "PATH: key".
// Fails (InvalidArgument, one line) when the file cannot be read, is not
// JSON, is not an object, has an unknown key (with a "did you mean"), a key
// of the wrong type (naming key and value), or two spellings of one key.
Result<RawSettings> ReadConfigFile(const std::string& path);

// The same for text already in memory; `name` stands for the file in messages.
Result<RawSettings> ParseConfigText(std::string_view text, const std::string& name);

}  // namespace muster::cli
