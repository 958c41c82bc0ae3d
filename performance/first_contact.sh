#!/usr/bin/env bash
# A newcomer's first contact: README command 1 (set-up, then the main job) from a fresh `git clone --depth 1`, with
# empty pip, uv and genenv caches, timed as a whole and in its two parts, with the peak memory and the load.
#
#   bash performance/first_contact.sh [REPO_URL] [WORK_DIR]     # default: this checkout's committed HEAD, /tmp/first_contact
#
# Run it on a machine with nothing else running: it records the cores other processes kept busy just before it starts
# (5 s of /proc/stat) and the load averages before and after, and the machine's speed at this hour right after
# (performance/yardstick.py). Writes into results/learning_curves/main_job/ of this
# checkout: first_contact.json (setup_s, job_s, total_s, peak_rss_mb, load, commit, date), the job's metrics.jsonl,
# learning_curve.png and printed output (output.txt), the set-up's printed output (setup_output.txt) and summary.txt.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
REPO=${1:-file://$HERE}
WORK=${2:-/tmp/first_contact}
DEST=$HERE/results/learning_curves/main_job

busy_cores() {  # cores kept busy over 5 s, from /proc/stat (nothing of genenv is installed yet)
  python3 -c 'import os, time
def busy():
    f = [int(v) for v in open("/proc/stat").readline().split()[1:9]]
    return sum(f) - f[3] - f[4], sum(f)
b0, t0 = busy(); time.sleep(5); b1, t1 = busy()
print(round(os.cpu_count() * (b1 - b0) / (t1 - t0), 2))'
}

rm -rf "$WORK"
mkdir -p "$WORK"
git clone -q --depth 1 "$REPO" "$WORK/clone"
cd "$WORK/clone"
export PIP_CACHE_DIR=$WORK/pip-cache        # empty, as `pip cache purge` leaves it, without touching the user's cache
export UV_CACHE_DIR=$WORK/uv-cache          # uv's, likewise
export GENENV_CACHE_DIR=$WORK/genenv-cache  # genenv's converted weights: none yet
BUSY=$(busy_cores)
UPTIME_BEFORE=$(uptime)
echo "first contact at $(git rev-parse --short HEAD): busy cores before: $BUSY; $UPTIME_BEFORE"

# README command 1, with a timestamp between its two parts
/usr/bin/time -v -o "$WORK/time.txt" bash -c '
  date +%s.%N > "$0/t0"
  bash scripts/setup.sh | tee "$0/setup_output.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
  date +%s.%N > "$0/t1"
  GENENV_DATA_DIR=${GENENV_DATA_DIR:-../shared/data} .venv/bin/python -m genenv.train +bench=reasoning_gym \
    | tee "$0/output.txt"
  rc=${PIPESTATUS[0]}
  date +%s.%N > "$0/t2"
  exit "$rc"' "$WORK"
UPTIME_AFTER=$(uptime)
# the machine's speed at this hour, outside the timed command (performance/yardstick.py)
YARDSTICK=$(.venv/bin/python performance/yardstick.py 2>/dev/null | tail -n 1 || echo null)

RUN=$(sed -n 's/^run folder: \([^ ]*\) .*/\1/p' "$WORK/output.txt")
cp "$RUN/metrics.jsonl" "$RUN/learning_curve.png" "$DEST/"
cp "$WORK/output.txt" "$WORK/setup_output.txt" "$DEST/"
python3 - "$WORK" "$DEST" "$(git rev-parse --short HEAD)" "$BUSY" "$UPTIME_BEFORE" "$UPTIME_AFTER" "$YARDSTICK" <<'EOF'
import datetime, json, pathlib, re, sys

work, dest, commit, busy, before, after, yardstick = sys.argv[1:]
work, dest = pathlib.Path(work), pathlib.Path(dest)
t0, t1, t2 = (float((work / name).read_text()) for name in ("t0", "t1", "t2"))
timed = (work / "time.txt").read_text()
peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", timed).group(1))
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", timed).group(1)
load = lambda line: [float(v) for v in line.rsplit("load average:", 1)[1].split(",")]
result = {
    "setup_s": round(t1 - t0, 1),
    "job_s": round(t2 - t1, 1),
    "total_s": round(t2 - t0, 1),
    "peak_rss_mb": round(peak_kb / 1024),
    "load": {"busy_cores_before": float(busy), "load_average_before": load(before), "load_average_after": load(after)},
    "yardstick": json.loads(yardstick),  # performance/yardstick.py right after: the machine's speed at this hour
    "commit": commit,
    "date": datetime.date.today().isoformat(),
    "command": "bash scripts/setup.sh && GENENV_DATA_DIR=${GENENV_DATA_DIR:-../shared/data} .venv/bin/python -m "
    "genenv.train +bench=reasoning_gym",
    "conditions": "fresh git clone --depth 1, empty pip, uv and genenv caches; /usr/bin/time -v wall " + wall,
}
(dest / "first_contact.json").write_text(json.dumps(result, indent=1) + "\n")
metrics = [json.loads(line) for line in (dest / "metrics.jsonl").read_text().splitlines() if line.strip()]
minutes = lambda s: "{} min {} s".format(*divmod(round(s), 60))
lines = [
    f"README command 1 on a fresh clone of {commit} ({result['date']}), set-up included: empty pip, uv and",
    f"genenv caches; 2 cores, {busy} of them kept busy by other processes just before (1-minute load",
    f"{result['load']['load_average_before'][0]:.2f} at the start, {result['load']['load_average_after'][0]:.2f} at"
    " the end, the job's own work):",
    "  " + result["command"],
    f"set-up {minutes(t1 - t0)}, the job {minutes(t2 - t1)}, total {minutes(t2 - t0)} (/usr/bin/time -v);"
    f" peak RSS {peak_kb / 1024 / 1024:.2f} GiB; exit 0",
    "",
    "the set-up printed:",
    *("  " + line for line in (work / "setup_output.txt").read_text().splitlines()),
    "",
    "the job printed:",
    *("  " + line for line in (work / "output.txt").read_text().splitlines()),
    "",
]
for record in metrics:
    stages = ", ".join(f"{name} {seconds:.0f}" for name, seconds in record["stage_seconds"].items())
    agent = record.get("agent", {})
    steps = f" ({agent['steps']:.0f} GRPO steps, {agent['step_time']:.1f} s a step)" if agent.get("steps") else ""
    lines.append(f"stage seconds, epoch {record['epoch']}: {stages}{steps}; peak RSS {record['peak_rss_mb']:.0f} MB")
lines += [
    "",
    "One seed of the job: a sample of it, not a measured effect of GRPO (results/agent_learning/).",
]
(dest / "summary.txt").write_text("\n".join(lines) + "\n")
print(json.dumps(result, indent=1))
# the durations the set-up's and the job's first lines announce, against these
repo = dest.parents[2]
for where, measured in ((repo / "scripts" / "setup.sh", t1 - t0), (repo / "genenv" / "console.py", t2 - t1)):
    announced = float(re.search(r"about (\d+(?:\.\d+)?) minutes", where.read_text()).group(1))
    if abs(announced * 60 - measured) > 30:
        print(f"{where.relative_to(repo)} announces about {announced} minutes; measured {minutes(measured)}: update it")
EOF
