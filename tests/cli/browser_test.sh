#!/usr/bin/env bash
# Opens an HTML report of a 300-node, 8-GPU synthetic fleet in headless Chromium (Debian's
# package) and checks what a person would see: the page logs nothing to the console, every
# plot has all its marks drawn with a size (measured by the browser's layout, not read from the
# file), the failing and lagging nodes are named, and a screenshot is saved for a person. Then
# the same for a comparison page (perfgate compare --html) of a driver upgrade, and one node's
# report. Screenshots of the three are left in OUT_DIR (report.png, compare.png,
# node-report.png), checked to be PNGs of the window's size.
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

# screenshot NAME PAGE WIDTH HEIGHT: a picture of PAGE for a person to look at, $out/NAME.png;
# checked to be a PNG of the window's size.
screenshot() {
  browser "$1" --hide-scrollbars --window-size="$3,$4" --virtual-time-budget=5000 \
    --screenshot="$out/$1.png" "file://$out/$2" >/dev/null 2>"$out/$1-shot.log"
  if ! python3 - "$out/$1.png" "$3" "$4" <<'PY'
import struct, sys
path, width, height = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
try:
    head = open(path, "rb").read(24)
except OSError as e:
    sys.exit(f"no screenshot: {e}")
if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
    sys.exit(f"{path} is not a PNG")
w, h = struct.unpack(">II", head[16:24])
if (w, h) != (width, height):
    sys.exit(f"{path} is {w}x{h}, expected {width}x{height}")
PY
  then
    echo "FAIL: screenshot $1 (see $out/$1-shot.log)" >&2
    exit 1
  fi
}

# 3. A picture of the fleet report.
screenshot report report.html 1280 6400

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
screenshot compare compare.html 1280 2400

# 5. One node's report (a failing node of the fleet): nothing in the console, and its picture.
node_file=$(grep -l '"verdict": *"FAIL"' "$out"/reports/*.json | head -1)
if [ -z "$node_file" ]; then
  echo "FAIL: the fleet fixture wrote no failing node" >&2
  exit 1
fi
"$perfgate" report "$node_file" -o "$out/node-report.html" --title "One node"
browser node --virtual-time-budget=5000 --dump-dom "file://$out/node-report.html" \
  >"$out/node-dom.html" 2>"$out/node-console.log"
if grep -q "CONSOLE" "$out/node-console.log"; then
  echo "FAIL: the node report logged to the console:" >&2
  grep "CONSOLE" "$out/node-console.log" >&2
  exit 1
fi
if [ "$(grep -c '<tr class="node-row">' "$out/node-dom.html")" != 1 ]; then
  echo "FAIL: the node report of $node_file does not show one node" >&2
  exit 1
fi
screenshot node-report node-report.html 1280 2400
echo "report_browser: PASS; screenshots of the fleet report $out/report.png, the comparison" \
  "$out/compare.png and one node's report $out/node-report.png"
