"""Raises ValueError two calls deep: its traceback is compared warm and cold
(warm_workers_test.py)."""


def inner():
    raise ValueError("raised two calls deep")


def outer():
    inner()


if __name__ == "__main__":
    outer()
