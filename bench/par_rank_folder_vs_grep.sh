#!/bin/bash
# usage: [VENV=venv] [OUT=dir] bench/par_rank_folder_vs_grep.sh FOLDER (issue 9 speed check); best of 5 wall times of grep -rc (to a file) and of irlint (cold: --no-cache; default: warm cache)
F=$1; OUT=${OUT:-$(mktemp -d)}; mkdir -p $OUT
[ -n "$VENV" ] && . "$VENV/bin/activate"
export IRLINT_CACHE_DIR=$OUT/cache; rm -rf $IRLINT_CACHE_DIR
# pip byte-compiles an installed irlint; an editable checkout under PYTHONDONTWRITEBYTECODE would compile it on every start
python -m compileall -q $(python -c 'import importlib.util as u; print(*[d for n in ("irlint", "irlint.rules") for d in (u.find_spec(n).submodule_search_locations or [])])') >/dev/null
best() { local b=999; for i in 1 2 3 4 5; do s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); t=$(echo "$e - $s" | bc); b=$(echo "if ($t < $b) $t else $b" | bc); done; echo $b; }
g=$(best sh -c "grep -rc . '$F' > $OUT/grep.txt")
c=$(best irlint --no-cache -q "$F" -o $OUT/cold.txt)
irlint -q "$F" -o $OUT/warm.txt >/dev/null 2>&1
w=$(best irlint -q "$F" -o $OUT/warm.txt)
echo "folder=$F size=$(du -sh $F | cut -f1) files=$(ls $F | wc -l)"
echo "grep -rc: ${g}s  irlint --no-cache: ${c}s (x$(echo "scale=2; $c / $g" | bc))  irlint default, warm cache: ${w}s (x$(echo "scale=2; $w / $g" | bc))"
