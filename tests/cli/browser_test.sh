#!/usr/bin/env bash
# Opens an HTML report of a 300-node, 8-GPU synthetic fleet in headless Chromium (Debian's
# package) and checks what a person would see: the page logs nothing to the console, every
# plot has all its marks drawn with a size (measured by the browser's layout, not read from the
# file), the failing and lagging nodes are named, and a screenshot is saved for a person.
#   browser_test.sh PERFGATE FLEET_FIXTURE OUT_DIR
set -euo pipefail
perfgate=$1 fixture=$2 out=$3
chromium=${CHROMIUM:-$(command -v chromium || true)}
if [ -z "$chromium" ]; then
  echo "FAIL: chromium is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
rm -rf "$out" && mkdir -p "$out"
nodes=300 failing=4 lagging=3
"$fixture" "$out/reports" "$nodes" "$failing" "$lagging"
"$perfgate" report "$out/reports" -o "$out/report.html" --title "H200 fleet acceptance"

browser() {  # headless, one profile per run, no network
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$out/profile-$1" --enable-logging=stderr --v=0 "${@:2}"
}

# 1. The report on its own: nothing in the console (it has no script; a console line would
#    be a resource it failed to load or a parse error).
browser report --virtual-time-budget=5000 --dump-dom "file://$out/report.html" \
  >"$out/report-dom.html" 2>"$out/report-console.log"
if grep -q "CONSOLE" "$out/report-console.log"; then
  echo "FAIL: the report logged to the console:" >&2
  grep "CONSOLE" "$out/report-console.log" >&2
  exit 1
fi

# 2. Its layout: a page beside it loads it in a frame and measures every mark.
cat >"$out/harness.html" <<'HTML'
<!DOCTYPE html><html><body><pre id="result">pending</pre>
<iframe id="report" src="report.html" width="1280" height="900"></iframe>
<script>
document.getElementById('report').addEventListener('load', () => {
  const out = {plots: [], lagRows: 0, nodeRows: 0, failRows: 0};
  try {
    const doc = document.getElementById('report').contentDocument;
    for (const svg of doc.querySelectorAll('svg[data-plot]')) {
      let drawn = 0;
      for (const m of svg.querySelectorAll('.mark')) {
        const b = m.getBBox();
        if (b.width > 0 || b.height > 0) drawn++;
      }
      const r = svg.getBoundingClientRect();
      out.plots.push({kind: svg.dataset.plot, expected: Number(svg.dataset.marks), drawn,
                      width: r.width, height: r.height});
    }
    out.lagRows = doc.querySelectorAll('tr.lag-row').length;
    out.nodeRows = doc.querySelectorAll('tr.node-row').length;
    out.failRows = doc.querySelectorAll('tr.problem-row td.v-fail').length;
  } catch (e) { out.error = String(e); }
  document.getElementById('result').textContent = 'RESULT ' + JSON.stringify(out);
});
</script></body></html>
HTML
browser harness --allow-file-access-from-files --virtual-time-budget=10000 --dump-dom \
  "file://$out/harness.html" >"$out/harness-dom.html" 2>"$out/harness-console.log"
result=$(grep -o 'RESULT {.*}' "$out/harness-dom.html" | sed 's/^RESULT //' || true)
if [ -z "$result" ]; then
  echo "FAIL: the measuring page gave no result (see $out/harness-console.log)" >&2
  exit 1
fi
echo "$result" >"$out/layout.json"
python3 - "$out/layout.json" "$nodes" "$failing" "$lagging" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
nodes, failing, lagging = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
problems = []
if "error" in r:
    problems.append("the page could not be measured: " + r["error"])
kinds = [p["kind"] for p in r["plots"]]
want = {"strip": 8, "heatmap": 2, "lines": 1}
for kind, n in want.items():
    if kinds.count(kind) != n:
        problems.append(f"{kinds.count(kind)} {kind} plots, expected {n}")
for i, p in enumerate(r["plots"]):
    if p["drawn"] != p["expected"]:
        problems.append(f"plot {i} ({p['kind']}): {p['drawn']} of {p['expected']} marks drawn")
    if p["width"] < 100 or p["height"] < 50:
        problems.append(f"plot {i} ({p['kind']}) laid out at {p['width']}x{p['height']}")
strip_marks = sorted({p["expected"] for p in r["plots"] if p["kind"] == "strip"})
if strip_marks != [nodes, nodes * 8]:
    problems.append(f"strip plots hold {strip_marks} figures, expected {nodes} and {nodes * 8}")
if r["nodeRows"] != nodes or r["failRows"] != failing:
    problems.append(f"{r['nodeRows']} node rows with {r['failRows']} failing, "
                    f"expected {nodes} with {failing}")
if r["lagRows"] != lagging * 8 * 2:
    problems.append(f"{r['lagRows']} lagging rows, expected {lagging * 8 * 2}")
if problems:
    print("FAIL:\n  " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
marks = sum(p["drawn"] for p in r["plots"])
print(f"report_browser: {len(r['plots'])} plots, {marks} marks drawn, {r['nodeRows']} nodes, "
      f"{r['lagRows']} lagging figures")
PY

# 3. A picture for a person to look at.
browser shot --hide-scrollbars --window-size=1280,6400 --virtual-time-budget=5000 \
  --screenshot="$out/report.png" "file://$out/report.html" >/dev/null 2>"$out/shot.log"
if [ ! -s "$out/report.png" ]; then
  echo "FAIL: no screenshot (see $out/shot.log)" >&2
  exit 1
fi
echo "report_browser: PASS; report $out/report.html, screenshot $out/report.png"
