#!/bin/sh
# Times `plant-store import` of 1,000,000 generated rows (JSON Lines, then CSV) into fresh databases, and
# `plant-store export` of them. By hand only (not in npm test): sh bench/import-1m.sh  (after npm run build)
set -eu
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
node -e '
const fs = require("node:fs");
const rows = 1000000, j = [], c = ["id,name,tag"];
for (let i = 0; i < rows; i++) {
  const id = 1000000000000000000n + BigInt(i) * 7919n;
  j.push(`{"id":${id},"name":"Plant number ${i}","tag":"tag-${i % 100}"}`);
  c.push(`${id},"Plant, number ${i}",tag-${i % 100}`);
}
fs.writeFileSync(process.argv[1] + "/plants.jsonl", j.join("\n") + "\n");
fs.writeFileSync(process.argv[1] + "/plants.csv", c.join("\n") + "\n");
' "$dir"
for f in plants.jsonl plants.csv; do
  echo "== import $f"
  start=$(date +%s.%N)
  DATABASE_URL="sqlite:$dir/$f.db" node bin/plant-store.js import "$dir/$f" 2>/dev/null | head -3
  end=$(date +%s.%N)
  echo "wall time: $(echo "$end - $start" | bc) s"
done
echo "== export of the JSON Lines database"
start=$(date +%s.%N)
DATABASE_URL="sqlite:$dir/plants.jsonl.db" node bin/plant-store.js export > "$dir/out.jsonl"
end=$(date +%s.%N)
echo "wall time: $(echo "$end - $start" | bc) s, $(wc -l < "$dir/out.jsonl") lines"
