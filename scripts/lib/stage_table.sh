# shellcheck shell=bash
# Stages of a long script, timed, and their table printed when the script
# ends: after the last stage, after a failed one, or on an interrupt.
# Sourced by scripts/test.sh; needs bash and awk.
#
#   stage_table_init TIMINGS_DIR BUDGET_S
#       Arms the exit trap. TIMINGS_DIR holds the JUnit files ctest wrote
#       (--output-junit DIR/NAME.xml), read for the slowest tests; BUDGET_S is
#       the total past which the table warns.
#   stage [--keep-going] NAME COMMAND [ARGS...]
#       Runs COMMAND (a program or a shell function) in a subshell with
#       errexit on, and records its wall time and result: PASS (exit 0), SKIP
#       (exit 77, the suite's "skipped" code) or FAIL. After a FAIL the script
#       exits with COMMAND's code, unless --keep-going: then the next stages
#       run (a test stage's failure leaves the others worth running) and
#       stage_table_finish exits with the first failed stage's code.
#   stage_table_finish
#       Exits: 0, or the code of the first stage that failed.
#   stage_on_exit_hook
#       When the script defines it, the exit trap calls it first (to stop
#       what the script started in the background).
#   stage_budget NAME BUDGET_S
#       Marks a stage's own budget: the table warns when it passed it. May be
#       called from inside the stage's COMMAND (it reaches the table when the
#       command ends).
#   stage_total_budget BUDGET_S
#       Replaces the whole run's budget (stage_table_init's); likewise
#       callable from inside a stage.
#   stage_note NAME TEXT
#       Adds TEXT in brackets after the stage's result in the table; likewise
#       callable from inside the stage.

STAGE_NAMES=()
STAGE_SECONDS=()
STAGE_RESULTS=()
declare -A STAGE_BUDGET=()  # NAME -> seconds, from stage_budget
declare -A STAGE_NOTE=()    # NAME -> text, from stage_note
# What stage_budget and stage_note say inside a stage's subshell: one
# "KIND<tab>NAME<tab>VALUE" line each, applied when the stage ends.
STAGE_SIDE_FILE=""
STAGE_CURRENT=""
STAGE_CURRENT_START=0
STAGE_TIMINGS_DIR=""
STAGE_TOTAL_BUDGET_S=0
STAGE_RUN_START=$SECONDS
STAGE_FIRST_FAILURE=0

stage_table_init() {
  STAGE_TIMINGS_DIR=$1
  STAGE_TOTAL_BUDGET_S=$2
  STAGE_RUN_START=$SECONDS
  STAGE_SIDE_FILE="$STAGE_TIMINGS_DIR/stage-side.tsv"
  : >"$STAGE_SIDE_FILE"
  trap 'stage_table_on_exit' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

stage_clock() {  # SECONDS -> m:ss
  printf '%d:%02d' $(($1 / 60)) $(($1 % 60))
}

stage() {
  local keep_going=0 name rc result
  if [[ $1 == --keep-going ]]; then
    keep_going=1
    shift
  fi
  name=$1
  shift
  echo "== $name"
  STAGE_CURRENT=$name
  STAGE_CURRENT_START=$SECONDS
  # errexit holds inside the subshell only when the subshell is not itself
  # the left side of || or &&: hence set +e around it.
  set +e
  (
    set -e
    "$@"
  )
  rc=$?
  set -e
  stage_apply_side_file
  case $rc in
    0) result=PASS ;;
    77) result=SKIP ;;
    *) result="FAIL (exit $rc)" ;;
  esac
  STAGE_NAMES+=("$name")
  STAGE_SECONDS+=($((SECONDS - STAGE_CURRENT_START)))
  STAGE_RESULTS+=("$result")
  STAGE_CURRENT=""
  if [[ $result == FAIL* ]]; then
    ((STAGE_FIRST_FAILURE != 0)) || STAGE_FIRST_FAILURE=$rc
    ((keep_going)) || exit "$rc"
  fi
  return 0
}

stage_table_finish() {
  exit "$STAGE_FIRST_FAILURE"
}

stage_budget() {
  stage_set budget "$1" "$2"
}

stage_total_budget() {
  stage_set total - "$1"
}

stage_note() {
  stage_set note "$1" "$2"
}

# KIND NAME VALUE: now, or, inside a stage's subshell (whose variables die
# with it), through the side file when the stage ends.
stage_set() {
  if [[ -n $STAGE_CURRENT && -n $STAGE_SIDE_FILE ]]; then
    printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$STAGE_SIDE_FILE"
    return
  fi
  case $1 in
    budget) STAGE_BUDGET[$2]=$3 ;;
    note) STAGE_NOTE[$2]=$3 ;;
    total) STAGE_TOTAL_BUDGET_S=$3 ;;
  esac
}

stage_apply_side_file() {
  local kind name value line lines=()
  [[ -n $STAGE_SIDE_FILE && -s $STAGE_SIDE_FILE ]] || return 0
  mapfile -t lines <"$STAGE_SIDE_FILE"
  : >"$STAGE_SIDE_FILE"
  for line in "${lines[@]}"; do
    IFS=$'\t' read -r kind name value <<<"$line"
    STAGE_CURRENT="" stage_set "$kind" "$name" "$value"  # applied here, not written back
  done
}

# The slowest test cases of every JUnit file, as "SECONDS FILE TEST" lines.
stage_slowest_tests() {
  local count=$1 file
  for file in "$STAGE_TIMINGS_DIR"/*.xml; do
    [[ -f $file ]] || continue
    awk -v config="$(basename "$file" .xml)" '
      /<testcase / {
        name = $0; sub(/.*<testcase[^>]* name="/, "", name); sub(/".*/, "", name)
        time = $0; sub(/.*[ ]time="/, "", time); sub(/".*/, "", time)
        status = ""
        if ($0 ~ /status="/) { status = $0; sub(/.*status="/, "", status); sub(/".*/, "", status) }
        printf "%.1f %s %s%s\n", time, config, name, (status == "run" || status == "" ? "" : " (" status ")")
      }' "$file"
  done | sort -rn -k1,1 | awk -v n="$count" 'NR <= n'  # reads all: no SIGPIPE for sort
}

stage_table_on_exit() {
  local rc=$? i total width=14 line budget
  trap - EXIT
  # The table must not fail the exit: nothing in it may end the script.
  set +e +o pipefail
  declare -F stage_on_exit_hook >/dev/null && stage_on_exit_hook
  if [[ -n $STAGE_CURRENT ]]; then  # interrupted, or exited inside a stage's shell code
    STAGE_NAMES+=("$STAGE_CURRENT")
    STAGE_SECONDS+=($((SECONDS - STAGE_CURRENT_START)))
    STAGE_RESULTS+=("INTERRUPTED (exit $rc)")
  elif ((STAGE_FIRST_FAILURE != 0)); then
    rc=$STAGE_FIRST_FAILURE  # the first failure, also when a later stage stopped the run
  fi
  total=$((SECONDS - STAGE_RUN_START))
  echo
  echo "== stages (wall time)"
  printf "%-${width}s  %7s  %s\n" stage time result
  for i in "${!STAGE_NAMES[@]}"; do
    line=$(printf "%-${width}s  %7s  %s" "${STAGE_NAMES[i]}" "$(stage_clock "${STAGE_SECONDS[i]}")" \
      "${STAGE_RESULTS[i]}")
    [[ -z ${STAGE_NOTE[${STAGE_NAMES[i]}]:-} ]] || line+=" (${STAGE_NOTE[${STAGE_NAMES[i]}]})"
    budget=${STAGE_BUDGET[${STAGE_NAMES[i]}]:-0}
    if ((budget > 0 && STAGE_SECONDS[i] > budget)); then
      line+="  WARNING: over its budget of $(stage_clock "$budget")"
    fi
    echo "$line"
  done
  printf "%-${width}s  %7s  %s\n" total "$(stage_clock "$total")" "exit $rc"
  if ((STAGE_TOTAL_BUDGET_S > 0 && total > STAGE_TOTAL_BUDGET_S)); then
    echo "WARNING: the total $(stage_clock "$total") is over the budget of $(stage_clock "$STAGE_TOTAL_BUDGET_S") (docs/testing.md)"
  fi
  if [[ -n $STAGE_TIMINGS_DIR ]] && compgen -G "$STAGE_TIMINGS_DIR/*.xml" >/dev/null; then
    echo
    echo "== the 15 slowest tests (seconds, stage, test)"
    stage_slowest_tests 15 | awk '{ printf "%7s  %-12s  %s", $1, $2, $3; for (i = 4; i <= NF; i++) printf " %s", $i; print "" }'
  fi
  exit "$rc"
}
