#!/usr/bin/env python3
"""The man pages and the bash completion cover every flag the binaries print.

    python3 tests/packaging/docs_cover_flags_test.py --bin-dir build/bin --source-dir .

Fails (exit 1, listing what is missing) when
  - a flag printed by `muster --help`, `muster launch --help`, `musterd --help`
    or `muster-train --help` (every spelling: dashes, underscores, -X), or by
    `muster status --help`, is not a tagged option of the OPTIONS
    section of packaging/man/<program>.1, or a page does not list --version;
  - a `musterd` flag is not offered by packaging/completion/musterd, or a
    musterd case below goes wrong (files, --rdzv-conf keys, prefixes);
  - a `muster` flag is not offered by packaging/completion/muster, checked by
    running the completion function in bash (COMP_WORDS/COMP_CWORD set, the
    function called, COMPREPLY read), or a completion case below goes wrong:
    `muster --nproc` -> --nproc-per-node, the fixed choices of every flag
    whose --help metavar lists them (--gpu-visibility all|isolate, ...),
    nothing but bash's default completion after SCRIPT, files for --config,
    directories for --log-dir, and the subcommands.
Python 3 standard library only; needs bash.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

PROGRAMS = ("muster", "musterd", "muster-train")
# A flag, as written in --help, a man page or a completion reply.
LONG_FLAG = re.compile(r"(?<![\w-])--[A-Za-z0-9][\w-]*")
SHORT_FLAG = re.compile(r"(?<![\w-])-[A-Za-z](?![\w-])")


class Failures:
    def __init__(self):
        self.items = []

    def add(self, what):
        if what in self.items:
            return
        self.items.append(what)
        print("MISSING: " + what)


def run(cmd, **kwargs):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "SLURM_"))}
    env["LC_ALL"] = "C"
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, **kwargs)


# --help parsing -------------------------------------------------------------


def help_flags(text, group_prefix=None):
    """Flags defined by a --help text: {flag: metavar} for every spelling;
    with group_prefix, only those under a heading ("Output:") starting with it.

    Definition lines are indented by exactly two spaces and start with '-':
    muster's "  -r, --redirects STD", CLI11's "  -h,--help   Print ...".
    """
    flags = {}
    group = ""
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):
            group = line
            continue
        if not re.match(r"^  -", line):
            continue
        if group_prefix is not None and not group.startswith(group_prefix):
            continue
        tokens = [t for t in re.split(r",\s*|\s+", line.strip()) if t]
        names = []
        metavar = ""
        for token in tokens:
            if token.startswith("-"):
                names.append(token)
            else:
                metavar = token
                break
        for name in names:
            flags[name] = metavar
    return flags


def literal_choices(metavar):
    """The fixed values of a metavar such as 'all|isolate' or 'N|gpu|cpu|auto'."""
    if "|" not in metavar:
        return []
    return [c for c in metavar.split("|") if re.fullmatch(r"[a-z][a-z0-9_-]*", c)]


def binary_flags(bin_dir, failures):
    """{program: {flag: metavar}} from --help; muster's launch-only and status flags apart."""
    out = {}
    out_help = {}
    for program in PROGRAMS:
        path = os.path.join(bin_dir, program)
        if not os.access(path, os.X_OK):
            failures.add(f"{path}: no such executable (build first, or pass --bin-dir)")
            continue
        result = run([path, "--help"])
        out_help[path] = result.stdout
        if result.returncode != 0:
            failures.add(f"{program} --help exited {result.returncode}: {result.stderr.strip()}")
        flags = help_flags(result.stdout)
        if not flags:
            failures.add(f"{program} --help: no flag definitions found in:\n{result.stdout}")
        out[program] = flags
    path = os.path.join(bin_dir, "muster")
    if os.access(path, os.X_OK):
        launch_help = run([path, "launch", "--help"]).stdout
        out["muster launch"] = help_flags(launch_help)
        # The flags only `muster launch` takes, under their own heading.
        out["launch only"] = help_flags(out_help[path], "muster launch only")
        if not out["launch only"]:
            failures.add("muster --help: no 'muster launch only' group found")
        status_help = run([path, "status", "--help"]).stdout
        out["muster status"] = help_flags(status_help)
        if not out["muster status"]:
            failures.add("muster status --help: no flag definitions found in:\n" + status_help)
    return out


# man pages ------------------------------------------------------------------


def roff_to_text(line):
    line = line.replace("\\-", "-").replace("\\(em", "-")
    line = re.sub(r"\\f(\(..|\[[^]]*\]|.)", "", line)  # font changes
    line = re.sub(r"\\[&%c]", "", line)
    return line


def man_option_tags(path):
    """Flags on the tag lines (the line after .TP) of the OPTIONS section."""
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if not re.match(r"^['.]\\\"", l)]
    tags = set()
    in_options = False
    after_tp = False
    for line in lines:
        if line.startswith(".SH"):
            in_options = line.split(None, 1)[1:] == ["OPTIONS"]
            after_tp = False
            continue
        if not in_options:
            continue
        if line.startswith(".TP"):
            after_tp = True
            continue
        if after_tp:
            text = roff_to_text(line)
            tags.update(LONG_FLAG.findall(text))
            tags.update(SHORT_FLAG.findall(text))
            after_tp = False
    return tags


def check_man_pages(source_dir, flags, failures):
    pages = {
        "muster": ["muster", "muster launch", "muster status"],
        "musterd": ["musterd"],
        "muster-train": ["muster-train"],
    }
    for page, sources in pages.items():
        path = os.path.join(source_dir, "packaging", "man", page + ".1")
        if not os.path.exists(path):
            failures.add(f"{path}: no such man page")
            continue
        tags = man_option_tags(path)
        wanted = {}  # flag -> the outputs that print it
        for source in sources:
            for flag in flags.get(source, {}):
                wanted.setdefault(flag, []).append(source)
        for flag in sorted(wanted):
            if flag not in tags:
                from_ = " and ".join(wanted[flag])
                failures.add(f"{path}: OPTIONS does not document {flag} (printed by {from_})")
        if "--version" not in tags:
            failures.add(f"{path}: OPTIONS does not document --version")
        dashed = lambda flag: flag[:2] + flag[2:].replace("_", "-")
        extra = sorted(t for t in tags if dashed(t) not in {dashed(w) for w in wanted} | {"--version"})
        if extra and all(flags.get(source) for source in sources):
            print(f"note: {path} documents flags its --help does not print: {' '.join(extra)}")


# bash completion ------------------------------------------------------------


def bash_words(line):
    """COMP_WORDS as bash builds them: split at blanks, and at '=' and ':'
    (COMP_WORDBREAKS), which become words of their own."""
    words = []
    for blank_word in line.split():
        words.extend(w for w in re.split(r"([=:]+)", blank_word) if w)
    if line.endswith(" ") or not words:
        words.append("")
    return words


DRIVER = r"""
source "$1" || exit 3
COMPLETER=$2
# compopt works only inside real completion; record the calls instead.
compopt() { _calls+="compopt $*;"; return 0; }
sim() {
  local id=$1
  shift
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE="${COMP_WORDS[*]}"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _calls=""
  "$COMPLETER" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
  printf '@@%s\n' "$id"
  printf '%s\n' "${COMPREPLY[@]}"
  printf '@calls %s\n' "$_calls"
}
"""


def complete_all(script, lines, cwd, completer="_muster"):
    """{line: (replies, compopt calls)} for each command line, one bash run;
    `completer` is the completion function the script defines."""
    body = [DRIVER]
    for i, line in enumerate(lines):
        body.append("sim " + " ".join(shlex.quote(w) for w in [str(i)] + bash_words(line)))
    result = run(["bash", "-c", "\n".join(body), "driver", script, completer], cwd=cwd)
    if result.returncode != 0:
        raise RuntimeError(f"bash exited {result.returncode}: {result.stderr}")
    out = {}
    current = None
    for raw in result.stdout.split("\n"):
        if raw.startswith("@@"):
            current = lines[int(raw[2:])]
            out[current] = ([], "")
        elif raw.startswith("@calls ") and current is not None:
            out[current] = (out[current][0], raw[len("@calls ") :])
        elif raw and current is not None:
            out[current][0].append(raw)
    return out


def check_completion(source_dir, flags, failures):
    script = os.path.abspath(os.path.join(source_dir, "packaging", "completion", "muster"))
    if not os.path.exists(script):
        failures.add(f"{script}: no such completion script")
        return
    muster = flags.get("muster", {})
    launch_only = flags.get("launch only", {})
    muster = {f: m for f, m in muster.items() if f not in launch_only}
    status = flags.get("muster status", {})

    cases = []  # (line, check(replies, calls) -> error or None)

    def expect(line, check):
        cases.append((line, check))

    def offers(flag):
        return lambda r, c: None if flag in r else f"does not offer {flag} (got {r})"

    def exactly(*values):
        return lambda r, c: None if sorted(r) == sorted(values) else f"gives {r}, not {list(values)}"

    def includes(*values):
        missing = lambda r: [v for v in values if v not in r]
        return lambda r, c: f"misses {missing(r)} (got {r})" if missing(r) else None

    def defers(r, c):
        if r:
            return f"offers {r} after SCRIPT"
        return None if "-o default" in c else "does not defer to default completion (compopt -o default)"

    # Every spelling of every flag, completed from itself.
    for flag in sorted(muster):
        if flag.startswith("--"):
            expect("muster " + flag, offers(flag))
    for flag in sorted(launch_only):
        if flag.startswith("--"):
            expect("muster launch " + flag, offers(flag))
    for flag in sorted(status):
        if flag.startswith("--"):
            expect("muster status " + flag, offers(flag))
    # The lists a bare "--" / "-" gives.
    dashed = sorted(f for f in muster if f.startswith("--") and "_" not in f)
    expect("muster --", includes(*dashed))
    expect("muster -", includes(*sorted(f for f in muster if SHORT_FLAG.fullmatch(f))))
    expect("muster launch --", includes(*sorted(f for f in launch_only if "_" not in f)))
    expect(
        "muster --",
        lambda r, c: (
            f"offers launch-only flags to plain muster: {sorted(set(r) & set(launch_only))}"
            if set(r) & set(launch_only)
            else None
        ),
    )
    # The cases of the brief.
    expect("muster --nproc", exactly("--nproc-per-node"))
    expect("muster --nproc_", exactly("--nproc_per_node"))
    # Fixed choices, from the metavars of --help (e.g. all|isolate).
    for flag, metavar in sorted({**muster, **launch_only}.items()):
        choices = literal_choices(metavar)
        if not choices:
            continue
        prefix = "muster launch " if flag in launch_only else "muster "
        expect(prefix + flag + " ", exactly(*choices))
        if flag.startswith("--"):
            expect(prefix + flag + "=", exactly(*choices))
    expect("muster --gpu-visibility ", exactly("all", "isolate"))
    expect("muster --gpu_visibility=is", exactly("isolate"))
    expect("muster -r ", exactly("0", "1", "2", "3"))
    # A flag's value is not SCRIPT; SCRIPT ends muster's options.
    expect("muster --rdzv-id job7 --nnodes 2:4 --nproc", exactly("--nproc-per-node"))
    expect("muster -r 3 --nproc", exactly("--nproc-per-node"))
    expect("muster train.py --", defers)
    expect("muster --nproc-per-node 2 train.py --lr", defers)
    expect("muster --no-python ./prog --", defers)
    expect("muster launch --use-env train.py --local", defers)
    expect("muster -- train.py --nproc", defers)
    # Files and directories, subcommands.
    expect("muster --config jo", exactly("job.json"))
    expect("muster --log-dir ", exactly("logs"))
    expect("muster status --token-file to", exactly("token"))
    expect("muster ", includes("launch", "status", "job.json", "train.py"))
    expect("muster tr", exactly("train.py"))
    expect("muster la", exactly("launch"))

    with tempfile.TemporaryDirectory() as cwd:
        for name in ("job.json", "train.py", "token"):
            open(os.path.join(cwd, name), "w").close()
        os.mkdir(os.path.join(cwd, "logs"))
        try:
            replies = complete_all(script, [line for line, _ in cases], cwd)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            failures.add(f"{script}: running the completion failed: {e}")
            return
    for line, check in cases:
        if line not in replies:
            failures.add(f"{script}: completing '{line}' gave no answer")
            continue
        got, calls = replies[line]
        error = check(got, calls)
        if error:
            failures.add(f"{script}: completing '{line}' {error}")


def check_musterd_completion(source_dir, flags, failures):
    """Every musterd flag of --help completes from itself; files, keys, prefixes."""
    script = os.path.abspath(os.path.join(source_dir, "packaging", "completion", "musterd"))
    if not os.path.exists(script):
        failures.add(f"{script}: no such completion script")
        return
    musterd = flags.get("musterd", {})
    cases = []
    for flag in sorted(musterd):
        if flag.startswith("--"):
            cases.append(("musterd " + flag, lambda r, c, f=flag: None if f in r else f"does not offer {f} (got {r})"))
    dashed = sorted(f for f in musterd if f.startswith("--") and "_" not in f)
    cases += [
        ("musterd --", lambda r, c: None if set(dashed) <= set(r) else f"misses {sorted(set(dashed) - set(r))}"),
        ("musterd --etcd-c", lambda r, c: None if sorted(r) == ["--etcd-cacert", "--etcd-cert"] else f"gives {r}"),
        ("musterd --token_f", lambda r, c: None if r == ["--token_file"] else f"gives {r}"),
        ("musterd --config jo", lambda r, c: None if r == ["job.json"] else f"gives {r}"),
        ("musterd --etcd-cacert=jo", lambda r, c: None if r == ["job.json"] else f"gives {r}"),
        ("musterd --rdzv-conf heart", lambda r, c: None if r == ["heartbeat_timeout="] else f"gives {r}"),
        ("musterd --rdzv-conf join_timeout=5,last", lambda r, c: None if r == ["5,last_call_timeout="] else f"gives {r}"),
        ("musterd --inject ", lambda r, c: None if r == ["crash-daemon,after="] else f"gives {r}"),
        ("musterd --port 29400 --me", lambda r, c: None if r == ["--metrics-port"] else f"gives {r}"),
    ]
    with tempfile.TemporaryDirectory() as cwd:
        open(os.path.join(cwd, "job.json"), "w").close()
        try:
            replies = complete_all(script, [line for line, _ in cases], cwd, "_musterd")
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            failures.add(f"{script}: running the completion failed: {e}")
            return
    for line, check in cases:
        if line not in replies:
            failures.add(f"{script}: completing '{line}' gave no answer")
            continue
        error = check(*replies[line])
        if error:
            failures.add(f"{script}: completing '{line}' {error}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--bin-dir",
        default=os.environ.get("MUSTER_BIN_DIR", "build/bin"),
        help="where muster, musterd and muster-train are (default: $MUSTER_BIN_DIR, else build/bin)",
    )
    parser.add_argument(
        "--source-dir",
        default=os.environ.get("MUSTER_SOURCE_DIR", os.path.dirname(os.path.dirname(here))),
        help="the source tree (default: $MUSTER_SOURCE_DIR, else two folders above this script)",
    )
    args = parser.parse_args()

    failures = Failures()
    flags = binary_flags(args.bin_dir, failures)
    counts = ", ".join(f"{p}: {len(f)}" for p, f in flags.items())
    print(f"flags found in --help / usage: {counts}")
    check_man_pages(args.source_dir, flags, failures)
    check_completion(args.source_dir, flags, failures)
    check_musterd_completion(args.source_dir, flags, failures)
    if failures.items:
        print(f"FAILED: {len(failures.items)} problem(s)")
        return 1
    print("OK: every flag is in its man page and in the muster and musterd completions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
