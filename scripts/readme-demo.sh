#!/usr/bin/env bash
# scripts/readme-demo.sh: runs the demo (rpc-bench with its defaults) and
# writes its output into README.md between the demo-output markers, so the
# README shows what the current code prints. A test
# (bench::readme_demo) fails when the block lacks a line the
# current report has. Takes ~10 s; the machine should be otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p apps -p bench --bins >/dev/null
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# stderr first-come with stdout, as a terminal shows them.
./target/release/rpc-bench "$@" >"$out" 2>&1
python3 - "$out" <<'PY'
import re, sys
text = open(sys.argv[1]).read().rstrip("\n")
readme = open("README.md").read()
begin = "<!-- demo-output: begin -->"
end = "<!-- demo-output: end -->"
if begin not in readme or end not in readme:
    sys.exit("README.md lacks the demo-output markers")
block = f"{begin}\n```\n$ ./scripts/demo.sh\n{text}\n```\n{end}"
readme = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, readme, flags=re.S)
open("README.md", "w").write(readme)
PY
echo "README.md: demo output regenerated ($(wc -l <"$out") lines)"
