"""A worker whose entry point is decorated with torch's @record, as torchrun's
docs ask: rank 1 raises, so torch writes the exception to the worker's
TORCHELASTIC_ERROR_FILE (set by the launcher), and the launcher reports it as
the root cause. Rank 0 exits 0."""
import os

from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    if int(os.environ["RANK"]) == 1:
        raise ValueError("record_failure: rank 1 gives up on purpose")


if __name__ == "__main__":
    main()
