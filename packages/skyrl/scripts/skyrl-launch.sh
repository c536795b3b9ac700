#!/usr/bin/env bash
# Shared SkyRL launcher for benchmax envs; envs/<name>/skyrl/run.sh sets the env's defaults and runs this.
#
#   1. exports the env's tasks as SkyRL parquet (+ the Python shim) into DATA_DIR
#   2. starts NUM_SERVERS `benchmax serve` processes — or uses the fleet in BENCHMAX_ENDPOINTS
#   3. runs SkyRL's trainer (uv run --isolated --extra fsdp -m benchmax_skyrl.entrypoint …) in SKYRL_DIR,
#      which registers the shim as environment.env_class=ENV_CLASS
#
# Every setting below is an environment variable; arguments after the options are extra SkyRL overrides
# (key=value), appended last so they win. --dry-run prints the exact commands and exits 0.
set -euo pipefail

usage() {
  sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  cat <<'USAGE'
Settings (environment variables, defaults in brackets):
  BENCHMAX_ENV (required)  MODEL [Qwen/Qwen2.5-1.5B-Instruct]  DATA_DIR [$HOME/data/benchmax/$BENCHMAX_ENV]
  ENV_CLASS [benchmax_$BENCHMAX_ENV]  SKYRL_DIR [$HOME/SkyRL]  NUM_GPUS [1]  N_SAMPLES [5]  MAX_TURNS [5]
  TRAIN_BATCH_SIZE [≤ 64, fits the exported train rows]  MINI_BATCH_SIZE [≤ 16, divides the batch]
  TRAIN_ROWS [read from DATA_DIR/export.json]  EPOCHS [10]  LR [1.0e-6]  MAX_PROMPT_LENGTH [4096]
  MAX_GENERATE_LENGTH [1024]  MAX_INPUT_LENGTH [prompt + 2 × turns × generate, ≤ MAX_MODEL_LEN]  MAX_MODEL_LEN [32768]
  STOP_STRINGS [["</tool_call>"]; "" for none]  LOGGER [console]  PROJECT [benchmax]  RUN_NAME [benchmax_$BENCHMAX_ENV]
  DATASET (a dataset path instead of the fixtures)  SPLIT [train=0.9]  ENV_OPTS ("k=v k2=v2")  SKIP_EXPORT [0]
  DATA_ROOT (the servers' --data-root: where relative file paths of exported rows resolve)
  BENCHMAX_ENDPOINTS (a fleet: URL[,URL…]; no local server is started)  NUM_SERVERS [1]
  BENCHMAX_HOST [127.0.0.1]  BENCHMAX_PORT [8000]  BENCHMAX_TOKEN [random]
  BENCHMAX_BIN [the installed @benchmax/cli bin, else npx --yes @benchmax/cli]
USAGE
}

DRY_RUN=0
OVERRIDES=()
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY_RUN=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) OVERRIDES+=("$arg") ;;
  esac
done

: "${BENCHMAX_ENV:?BENCHMAX_ENV must name the env (math, excel, wikipedia, crm, or a path)}"
ENV_NAME="$BENCHMAX_ENV"
die() {
  echo "benchmax: $*" >&2
  exit 2
}
# relative paths are taken from where the script was started: resolve them before anything changes directory
abspath() {
  case "$1" in
    /*) printf '%s' "$1" ;;
    *) printf '%s/%s' "$PWD" "${1#./}" ;;
  esac
}

# The CLI: a name npm resolves to this project's package — the installed @benchmax/cli bin, else
# `npx --yes @benchmax/cli` (never a bare `npx benchmax`, which names another registry package).
if [ -z "${BENCHMAX_BIN:-}" ]; then
  here_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  cli_pkg="$(cd "$here_dir" && node -p "require('path').dirname(require.resolve('@benchmax/cli/package.json'))" 2>/dev/null || true)"
  if [ -n "$cli_pkg" ] && [ -f "$cli_pkg/bin/benchmax.js" ]; then
    BENCHMAX_BIN="node $cli_pkg/bin/benchmax.js"
  else
    BENCHMAX_BIN="npx --yes @benchmax/cli"
  fi
fi
read -r -a BENCHMAX_CMD <<<"$BENCHMAX_BIN"
DATA_DIR="$(abspath "${DATA_DIR:-$HOME/data/benchmax/$ENV_NAME}")"
ENV_CLASS_SET="${ENV_CLASS:-}"
ENV_CLASS="${ENV_CLASS:-benchmax_$(basename "$ENV_NAME")}"
MODEL="${MODEL:-Qwen/Qwen2.5-1.5B-Instruct}"
SKYRL_DIR="$(abspath "${SKYRL_DIR:-$HOME/SkyRL}")"
NUM_GPUS="${NUM_GPUS:-1}"
N_SAMPLES="${N_SAMPLES:-5}"
MAX_TURNS="${MAX_TURNS:-5}"
TRAIN_BATCH_SIZE="${TRAIN_BATCH_SIZE:-}"
MINI_BATCH_SIZE="${MINI_BATCH_SIZE:-}"
MAX_MODEL_LEN="${MAX_MODEL_LEN:-32768}"
EPOCHS="${EPOCHS:-10}"
LR="${LR:-1.0e-6}"
MAX_PROMPT_LENGTH="${MAX_PROMPT_LENGTH:-4096}"
MAX_GENERATE_LENGTH="${MAX_GENERATE_LENGTH:-1024}"
LOGGER="${LOGGER:-console}"
PROJECT="${PROJECT:-benchmax}"
RUN_NAME="${RUN_NAME:-benchmax_$ENV_NAME}"
SPLIT="${SPLIT:-train=0.9}"
DATASET="${DATASET:-}"
[ -n "$DATASET" ] && DATASET="$(abspath "$DATASET")"
DATA_ROOT="${DATA_ROOT:-}"
[ -n "$DATA_ROOT" ] && DATA_ROOT="$(abspath "$DATA_ROOT")"
STOP_STRINGS="${STOP_STRINGS-[\"</tool_call>\"]}"
MAX_INPUT_LENGTH="${MAX_INPUT_LENGTH:-}"
if [ -z "$MAX_INPUT_LENGTH" ]; then
  # multi-turn context: the prompt, then per turn a reply and its tool results (budgeted at the reply length);
  # without it SkyRL caps the whole conversation at trainer.max_prompt_length (config.py: max_input_length
  # defaults to max_prompt_length) and long episodes stop at "length" with reward 0
  MAX_INPUT_LENGTH=$((MAX_PROMPT_LENGTH + 2 * MAX_TURNS * MAX_GENERATE_LENGTH))
  [ "$MAX_INPUT_LENGTH" -gt "$MAX_MODEL_LEN" ] && MAX_INPUT_LENGTH="$MAX_MODEL_LEN"
fi
[ "$MAX_INPUT_LENGTH" -gt "$MAX_PROMPT_LENGTH" ] ||
  die "MAX_INPUT_LENGTH ($MAX_INPUT_LENGTH) must exceed MAX_PROMPT_LENGTH ($MAX_PROMPT_LENGTH) to leave room for turns"
ENV_OPTS="${ENV_OPTS:-}"
SKIP_EXPORT="${SKIP_EXPORT:-0}"
NUM_SERVERS="${NUM_SERVERS:-1}"
BENCHMAX_HOST="${BENCHMAX_HOST:-127.0.0.1}"
BENCHMAX_PORT="${BENCHMAX_PORT:-8000}"
if [ -z "${BENCHMAX_TOKEN:-}" ]; then
  BENCHMAX_TOKEN="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
fi

# one or several envs (BENCHMAX_ENV=math,excel: a mixed-env run): each is exported to its own folder, served on its
# own ports, and registered as its own SkyRL env class; SkyRL reads env_class per row and concatenates the
# data.train_data files into one dataset (skyrl/train/dataset/dataset.py)
IFS=, read -r -a ENVS <<<"$ENV_NAME"
MIXED=0
[ ${#ENVS[@]} -gt 1 ] && MIXED=1
if [ "$MIXED" = 1 ]; then
  [ -n "${ENV_CLASS_SET:-}" ] && die "ENV_CLASS names one env's class; a mixed run uses benchmax_<env> for each"
  [ -n "$DATASET" ] && die "DATASET names one env's dataset; with several envs set DATASET_<ENV> (e.g. DATASET_EXCEL)"
  [ -n "${BENCHMAX_ENDPOINTS:-}" ] && [ -z "${BENCHMAX_ENV_CLASSES:-}" ] &&
    die "BENCHMAX_ENDPOINTS is one env's fleet; for several envs set BENCHMAX_ENV_CLASSES=\"benchmax_a=URL[,URL];benchmax_b=URL\""
fi

env_dir() { if [ "$MIXED" = 1 ]; then printf '%s/%s' "$DATA_DIR" "$(basename "$1")"; else printf '%s' "$DATA_DIR"; fi; }
env_class_of() { if [ "$MIXED" = 1 ]; then printf 'benchmax_%s' "$(basename "$1" | tr -c 'A-Za-z0-9_\n' '_')"; else printf '%s' "$ENV_CLASS"; fi; }
env_args_of() {
  local e="$1" var ds
  ENV_ARGS=()
  ds="$DATASET"
  if [ "$MIXED" = 1 ]; then
    var="DATASET_$(basename "$e" | tr 'a-z-' 'A-Z_')"
    ds="${!var:-}"
    [ -n "$ds" ] && ds="$(abspath "$ds")"
  fi
  [ -n "$ds" ] && ENV_ARGS+=(--dataset "$ds")
  for kv in $ENV_OPTS; do ENV_ARGS+=(--env-opt "$kv"); done
  return 0
}

EXPORT_CMDS=()
SERVE_CMDS=()
TRAIN_FILES=()
VAL_FILES=()
CLASS_SPECS=()
endpoints_all=()
k=0
for e in "${ENVS[@]}"; do
  env_args_of "$e"
  dir="$(env_dir "$e")"
  cls="$(env_class_of "$e")"
  EXPORT_CMDS+=("$(printf '%q ' "${BENCHMAX_CMD[@]}" export skyrl "$e" --out "$dir" --split "$SPLIT" --env-class "$cls" ${ENV_ARGS[@]+"${ENV_ARGS[@]}"})")
  TRAIN_FILES+=("'$dir/train.parquet'")
  VAL_FILES+=("'$dir/validation.parquet'")
  if [ -z "${BENCHMAX_ENDPOINTS:-}" ] && [ -z "${BENCHMAX_ENV_CLASSES:-}" ]; then
    eps=()
    for ((i = 0; i < NUM_SERVERS; i++)); do
      port=$((BENCHMAX_PORT + k * NUM_SERVERS + i))
      eps+=("http://$BENCHMAX_HOST:$port")
      serve=("${BENCHMAX_CMD[@]}" serve "$e" --host "$BENCHMAX_HOST" --port "$port" --token "$BENCHMAX_TOKEN")
      [ -n "$DATA_ROOT" ] && serve+=(--data-root "$DATA_ROOT")
      SERVE_CMDS+=("$(printf '%q ' "${serve[@]}" ${ENV_ARGS[@]+"${ENV_ARGS[@]}"})")
    done
    endpoints_all+=("${eps[@]}")
    CLASS_SPECS+=("$cls=$(IFS=,; echo "${eps[*]}")")
  fi
  k=$((k + 1))
done
if [ -z "${BENCHMAX_ENDPOINTS:-}" ] && [ -z "${BENCHMAX_ENV_CLASSES:-}" ]; then
  BENCHMAX_ENDPOINTS="$(IFS=,; echo "${endpoints_all[*]}")"
  [ "$MIXED" = 1 ] && BENCHMAX_ENV_CLASSES="$(IFS=';'; echo "${CLASS_SPECS[*]}")"
fi
if [ -z "${BENCHMAX_ENDPOINTS:-}" ]; then
  # a mixed fleet: every endpoint of BENCHMAX_ENV_CLASSES, for the health check
  BENCHMAX_ENDPOINTS="$(echo "$BENCHMAX_ENV_CLASSES" | tr ';' '\n' | sed 's/^[^=]*=//' | paste -sd, -)"
fi

# train rows: what the export wrote (export.json "train"), summed over the envs
train_rows() {
  local total=0 n e f
  for e in "${ENVS[@]}"; do
    f="$(env_dir "$e")/export.json"
    [ -f "$f" ] || return 1
    n="$(sed -n 's/.*"train": *\([0-9][0-9]*\).*/\1/p' "$f" | head -n 1)"
    [ -n "$n" ] || return 1
    total=$((total + n))
  done
  echo "$total"
}

# SkyRL asserts len(train dataset) >= trainer.train_batch_size (entrypoints/main_base.py get_train_dataset), that
# train_batch_size % policy_mini_batch_size == 0, and that policy_mini_batch_size * n_samples_per_prompt splits
# over the data-parallel ranks (utils/utils.py validate_batch_sizes). Defaults are derived to pass those; sizes
# you set are checked against them.
derive_batch_sizes() {
  local rows="$1" want_b want_m m b
  want_b="${TRAIN_BATCH_SIZE:-64}"
  want_m="${MINI_BATCH_SIZE:-16}"
  [ "$rows" -ge 1 ] || die "the export wrote no training rows"
  if [ -n "$TRAIN_BATCH_SIZE" ] && [ "$TRAIN_BATCH_SIZE" -gt "$rows" ]; then
    die "TRAIN_BATCH_SIZE=$TRAIN_BATCH_SIZE is larger than the $rows exported training rows (SkyRL needs at least one full batch); unset it to derive one"
  fi
  [ "$want_b" -gt "$rows" ] && want_b="$rows"
  if [ -n "$MINI_BATCH_SIZE" ]; then
    m="$MINI_BATCH_SIZE"
    [ "$m" -le "$want_b" ] || die "MINI_BATCH_SIZE=$m is larger than the train batch ($want_b)"
  else
    m="$want_m"
    [ "$m" -gt "$want_b" ] && m="$want_b"
    while [ "$m" -gt 1 ] && { [ $(((m * N_SAMPLES) % NUM_GPUS)) -ne 0 ] || { [ -n "$TRAIN_BATCH_SIZE" ] && [ $((TRAIN_BATCH_SIZE % m)) -ne 0 ]; }; }; do
      m=$((m - 1))
    done
  fi
  [ $(((m * N_SAMPLES) % NUM_GPUS)) -eq 0 ] ||
    die "policy mini-batch $m × N_SAMPLES $N_SAMPLES does not split over NUM_GPUS=$NUM_GPUS ranks; set MINI_BATCH_SIZE"
  if [ -n "$TRAIN_BATCH_SIZE" ]; then
    b="$TRAIN_BATCH_SIZE"
    [ $((b % m)) -eq 0 ] || die "TRAIN_BATCH_SIZE=$b is not a multiple of MINI_BATCH_SIZE=$m"
  else
    b=$(((want_b / m) * m))
  fi
  TRAIN_BATCH_SIZE="$b"
  MINI_BATCH_SIZE="$m"
}

build_train_cmd() {
  TRAIN_ENV=(
    "PYTHONPATH=$(env_dir "${ENVS[0]}")/python${PYTHONPATH:+:$PYTHONPATH}"
    "BENCHMAX_ENDPOINTS=$BENCHMAX_ENDPOINTS"
    "BENCHMAX_TOKEN=$BENCHMAX_TOKEN"
    "BENCHMAX_ENV_CLASS=$(env_class_of "${ENVS[0]}")"
    "BENCHMAX_MAX_TURNS=$MAX_TURNS"
  )
  [ -n "${BENCHMAX_ENV_CLASSES:-}" ] && TRAIN_ENV+=("BENCHMAX_ENV_CLASSES=$BENCHMAX_ENV_CLASSES")
  local stop=()
  if [ -n "$STOP_STRINGS" ]; then
    # SkyRL's sampling params take stop strings (config.py SamplingParams.stop); its vLLM params keep the stop
    # string in the output (inference_servers/engine_utils.py include_stop_str_in_output), so the reply still
    # carries a whole <tool_call>…</tool_call> block for the env server to parse
    stop=("generator.sampling_params.stop=$STOP_STRINGS" "generator.eval_sampling_params.stop=$STOP_STRINGS")
  fi
  TRAIN_CMD=(
    uv run --isolated --extra fsdp -m benchmax_skyrl.entrypoint
    "data.train_data=[$(IFS=,; echo "${TRAIN_FILES[*]}")]"
    "data.val_data=[$(IFS=,; echo "${VAL_FILES[*]}")]"
    trainer.algorithm.advantage_estimator=grpo
    "trainer.policy.model.path=$MODEL"
    trainer.placement.colocate_all=true
    trainer.strategy=fsdp
    "trainer.placement.policy_num_gpus_per_node=$NUM_GPUS"
    "trainer.placement.ref_num_gpus_per_node=$NUM_GPUS"
    "generator.inference_engine.num_engines=$NUM_GPUS"
    generator.inference_engine.tensor_parallel_size=1
    generator.inference_engine.backend=vllm
    generator.inference_engine.run_engines_locally=true
    generator.batched=false
    "generator.max_turns=$MAX_TURNS"
    "generator.n_samples_per_prompt=$N_SAMPLES"
    "generator.sampling_params.max_generate_length=$MAX_GENERATE_LENGTH"
    "generator.max_input_length=$MAX_INPUT_LENGTH"
    ${stop[@]+"${stop[@]}"}
    "trainer.epochs=$EPOCHS"
    "trainer.train_batch_size=$TRAIN_BATCH_SIZE"
    "trainer.policy_mini_batch_size=$MINI_BATCH_SIZE"
    "trainer.max_prompt_length=$MAX_PROMPT_LENGTH"
    "trainer.policy.optimizer_config.lr=$LR"
    "environment.env_class=$(env_class_of "${ENVS[0]}")"
    "trainer.logger=$LOGGER"
    "trainer.project_name=$PROJECT"
    "trainer.run_name=$RUN_NAME"
    ${OVERRIDES[@]+"${OVERRIDES[@]}"}
  )
}

if [ "$DRY_RUN" = 1 ]; then
  echo "# benchmax SkyRL launch for $ENV_NAME (dry run: nothing is started)"
  if [ "$SKIP_EXPORT" != 1 ]; then for c in "${EXPORT_CMDS[@]}"; do echo "$c"; done; fi
  for c in ${SERVE_CMDS[@]+"${SERVE_CMDS[@]}"}; do echo "$c&"; done
  [ ${#SERVE_CMDS[@]} -gt 0 ] && echo "# wait for ${BENCHMAX_ENDPOINTS//,/ } /health"
  rows="${TRAIN_ROWS:-$(train_rows || true)}"
  if [ -n "$rows" ]; then
    derive_batch_sizes "$rows"
    echo "# $rows training rows: train_batch_size=$TRAIN_BATCH_SIZE policy_mini_batch_size=$MINI_BATCH_SIZE"
  else
    TRAIN_BATCH_SIZE="${TRAIN_BATCH_SIZE:-64}"
    MINI_BATCH_SIZE="${MINI_BATCH_SIZE:-16}"
    echo "# training rows unknown until the export runs: batch sizes shown for 64+ rows are lowered to fit (TRAIN_ROWS=N previews)"
  fi
  build_train_cmd
  printf 'cd %q && env ' "$SKYRL_DIR"
  printf '%q ' "${TRAIN_ENV[@]}" "${TRAIN_CMD[@]}"
  echo
  exit 0
fi

if [ "$SKIP_EXPORT" != 1 ]; then
  echo "benchmax: exporting $ENV_NAME to $DATA_DIR" >&2
  for c in "${EXPORT_CMDS[@]}"; do eval "$c"; done
fi
rows="${TRAIN_ROWS:-$(train_rows || true)}"
[ -n "$rows" ] || die "no export.json in $DATA_DIR: run without SKIP_EXPORT=1, or set TRAIN_ROWS"
derive_batch_sizes "$rows"
echo "benchmax: $rows training rows: train_batch_size=$TRAIN_BATCH_SIZE policy_mini_batch_size=$MINI_BATCH_SIZE" >&2
build_train_cmd

# Every server and the trainer run in a process group of their own (job control: `set -m`), so stopping one stops
# what it spawned too (npx → node, Ray and vLLM workers). Whatever ends the script — the trainer exiting or
# crashing, Ctrl-C, SIGTERM, a failed health check — the EXIT trap stops the groups it started and waits for them.
SERVER_PGIDS=()
TRAIN_PGID=""
STOP_GRACE_S="${BENCHMAX_STOP_GRACE_S:-15}"
group_alive() { kill -0 -- "-$1" 2>/dev/null; }
stop_group() {
  local pgid="$1" sig="$2" i
  group_alive "$pgid" || return 0
  kill "-$sig" -- "-$pgid" 2>/dev/null || true
  for ((i = 0; i < STOP_GRACE_S * 10; i++)); do
    group_alive "$pgid" || return 0
    sleep 0.1
  done
  echo "benchmax: process group $pgid did not stop on SIG$sig within ${STOP_GRACE_S}s: SIGKILL" >&2
  kill -KILL -- "-$pgid" 2>/dev/null || true
}
cleanup() {
  local code=$?
  # a second Ctrl-C must not cut the cleanup short and leave servers behind
  trap - EXIT
  trap '' INT TERM HUP
  [ -n "$TRAIN_PGID" ] && stop_group "$TRAIN_PGID" TERM
  # SIGINT, not SIGTERM: a server drains on SIGTERM (its live rollouts served until released, 30 s at most), but the
  # trainer that held them is gone, so nothing would release them; SIGINT closes at once
  for pgid in ${SERVER_PGIDS[@]+"${SERVER_PGIDS[@]}"}; do stop_group "$pgid" INT; done
  [ ${#SERVER_PGIDS[@]} -gt 0 ] && echo "benchmax: stopped the env servers this launch started" >&2
  exit "$code"
}
on_signal() {
  echo "benchmax: $1: stopping the trainer and the env servers" >&2
  exit "$2"
}
trap cleanup EXIT
trap 'on_signal SIGINT 130' INT
trap 'on_signal SIGTERM 143' TERM
trap 'on_signal SIGHUP 129' HUP

# a port already in use is refused before anything starts: a server left from an earlier launch would otherwise
# answer the health check and the trainer would talk to the wrong env
port_free() {
  node -e '
const s = require("net").createServer();
s.once("error", (e) => process.exit(e.code === "EADDRINUSE" ? 3 : 4));
s.listen(Number(process.argv[2]), process.argv[1], () => s.close(() => process.exit(0)));' "$1" "$2"
}
if [ ${#SERVE_CMDS[@]} -gt 0 ]; then
  IFS=, read -r -a URLS <<<"$BENCHMAX_ENDPOINTS"
  for url in "${URLS[@]}"; do
    hp="${url#http://}"
    set +e
    port_free "${hp%:*}" "${hp##*:}"
    rc=$?
    set -e
    [ "$rc" = 3 ] && die "port ${hp##*:} on ${hp%:*} is already in use (a server left from an earlier launch?): stop it, or set BENCHMAX_PORT"
    [ "$rc" = 0 ] || die "cannot listen on ${hp%:*}:${hp##*:} (see above)"
  done
fi

# each server is told an instance tag (BENCHMAX_INSTANCE_ID); its /health reports `<tag>.<random>`, so the health
# wait accepts only the server this launch started
LAUNCH_TAG="bmx$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
set -m
TAGS=()
i=0
for c in ${SERVE_CMDS[@]+"${SERVE_CMDS[@]}"}; do
  tag="${LAUNCH_TAG}-$i"
  (
    export BENCHMAX_INSTANCE_ID="$tag"
    eval "exec $c"
  ) </dev/null &
  SERVER_PGIDS+=("$!")
  TAGS+=("$tag")
  i=$((i + 1))
done
set +m
# health: `ok <instance>` once /health answers 200
health() {
  node -e '
fetch(process.argv[1] + "/health").then(async (r) => {
  const b = await r.json().catch(() => ({}));
  process.stdout.write(r.ok ? "ok " + (b.instance ?? "") : "down");
}, () => process.stdout.write("down"));' "$1"
}
IFS=, read -r -a URLS <<<"$BENCHMAX_ENDPOINTS"
i=0
for url in "${URLS[@]}"; do
  ok=0
  for _ in $(seq 1 240); do
    if [ ${#SERVER_PGIDS[@]} -gt 0 ] && ! kill -0 "${SERVER_PGIDS[$i]}" 2>/dev/null; then
      die "the env server for $url exited before it became healthy (see its output above)"
    fi
    got="$(health "$url")"
    if [ "${got%% *}" = ok ]; then
      if [ ${#SERVER_PGIDS[@]} -gt 0 ]; then
        inst="${got#ok }"
        case "$inst" in
          "${TAGS[$i]}".*) ;;
          *) die "$url answers as instance '$inst', not the server this launch started (${TAGS[$i]}.*): another server holds the port" ;;
        esac
        echo "benchmax: $url is this launch's server (instance $inst, process group ${SERVER_PGIDS[$i]})" >&2
      fi
      ok=1
      break
    fi
    sleep 0.5
  done
  [ "$ok" = 1 ] || die "env server $url did not become healthy"
  i=$((i + 1))
done
echo "benchmax: env servers ready at $BENCHMAX_ENDPOINTS; starting SkyRL in $SKYRL_DIR" >&2
cd "$SKYRL_DIR"
# the trainer in the background of its own group, so a signal to this script runs the trap at once (bash defers
# traps while a foreground child runs) and the trap stops the trainer's whole group. Its stdin is /dev/null: a
# background group that read the terminal would be stopped (SIGTTIN) rather than fail (e.g. a login prompt)
set -m
env "${TRAIN_ENV[@]}" "${TRAIN_CMD[@]}" </dev/null &
TRAIN_PGID=$!
set +m
set +e
wait "$TRAIN_PGID"
code=$?
set -e
TRAIN_PGID=""
[ "$code" = 0 ] || echo "benchmax: the trainer exited with status $code" >&2
exit "$code"
