#!/usr/bin/env bash
# Opens an HTML report of a 300-node, 8-GPU synthetic fleet in headless Chromium (Debian's
# package) and checks what a person would see: the page logs nothing to the console, every
# plot has all its marks drawn with a size (measured by the browser's layout, not read from the
# file), the failing and lagging nodes are named, and a screenshot is saved for a person. Then
# the same for a comparison page (perfgate compare --html) of a driver upgrade.
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
# measure NAME: loads $out/NAME.html (a measuring page) and leaves its result in
# $out/NAME-layout.json.
measure() {
  browser "$1" --allow-file-access-from-files --virtual-time-budget=10000 --dump-dom \
    "file://$out/$1.html" >"$out/$1-dom.html" 2>"$out/$1-console.log"
  local result
  result=$(grep -o 'RESULT {.*}' "$out/$1-dom.html" | sed 's/^RESULT //' || true)
  if [ -z "$result" ]; then
    echo "FAIL: the measuring page $1 gave no result (see $out/$1-console.log)" >&2
    exit 1
  fi
  echo "$result" >"$out/$1-layout.json"
}
measure harness
python3 - "$out/harness-layout.json" "$nodes" "$failing" "$lagging" <<'PY'
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

# 4. perfgate compare --html: the same 24 nodes before and after a driver upgrade on 16 of them
#    (HBM 6% slower there). Every row's interval is drawn, the two HBM rows read regressed, and
#    the driver is named first for both.
"$fixture" --ab "$out/ab" 24 16 8 0.94
set +e
"$perfgate" compare "$out/ab/a" "$out/ab/b" --html "$out/compare.html" >"$out/compare.txt"
code=$?
set -e
if [ "$code" != 1 ]; then
  echo "FAIL: perfgate compare exited $code, expected 1 (a metric regressed)" >&2
  exit 1
fi
sed -e 's/report\.html/compare.html/' \
    -e "s|out.lagRows = .*|out.rows = doc.querySelectorAll('tr.cmp-row').length;|" \
    -e "s|out.nodeRows = .*|out.regressed = doc.querySelectorAll('tr.cmp-row td.v-fail').length;|" \
    -e "s|out.failRows = .*|out.firstKeys = [...doc.querySelectorAll('#why table')].map(t => t.querySelector('tr.why-row td').textContent);|" \
    "$out/harness.html" >"$out/compare-harness.html"
measure compare-harness
python3 - "$out/compare-harness-layout.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
problems = []
if "error" in r:
    problems.append("the page could not be measured: " + r["error"])
plots = [p for p in r["plots"] if p["kind"] == "intervals"]
if len(plots) != 1:
    problems.append(f"{len(plots)} interval plots, expected 1")
for p in plots:
    if p["drawn"] != p["expected"] or p["expected"] != r["rows"]:
        problems.append(f"{p['drawn']} of {p['expected']} intervals drawn for {r['rows']} rows")
    if p["width"] < 100 or p["height"] < 50:
        problems.append(f"the interval plot laid out at {p['width']}x{p['height']}")
if r["regressed"] != 2:
    problems.append(f"{r['regressed']} regressed rows, expected 2")
if r["firstKeys"] != ["driverVersion", "driverVersion"]:
    problems.append(f"first keys named {r['firstKeys']}, expected the driver for both rows")
if problems:
    print("FAIL:\n  " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"report_browser: comparison with {r['rows']} rows, {plots[0]['drawn']} intervals drawn, "
      f"{r['regressed']} regressed, explained by {r['firstKeys'][0]}")
PY
browser compare-shot --hide-scrollbars --window-size=1280,2400 --virtual-time-budget=5000 \
  --screenshot="$out/compare.png" "file://$out/compare.html" >/dev/null 2>"$out/compare-shot.log"
if [ ! -s "$out/compare.png" ]; then
  echo "FAIL: no screenshot of the comparison (see $out/compare-shot.log)" >&2
  exit 1
fi
echo "report_browser: PASS; report $out/report.html, screenshot $out/report.png;" \
  "comparison $out/compare.html, screenshot $out/compare.png"
