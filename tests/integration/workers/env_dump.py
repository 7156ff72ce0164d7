"""Worker that writes its environment to OUTDIR/rank<RANK>.json and exits 0."""
import json
import os
import sys

out_dir = sys.argv[1]
with open(os.path.join(out_dir, f"rank{os.environ['RANK']}.json"), "w") as f:
    json.dump(dict(os.environ), f)
