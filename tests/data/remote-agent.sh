#!/bin/sh
# A scripted agent for the remote tests: prints a prompt and obeys lines.
#   write PATH TEXT   appends TEXT (and a newline) to PATH in its worktree
#   line PATH N TEXT  replaces line N of PATH with TEXT
#   exit [N]          exits with code N
# anything else is echoed back as `got: <text>`.
printf 'remote agent ready in %s\n' "$(pwd)"
while true; do
  printf 'ready> '
  IFS= read -r line || exit 0
  set -- $line
  case "$1" in
    write)
      path=$2; shift 2
      printf '%s\n' "$*" >> "$path"
      printf 'wrote %s\n' "$path" ;;
    line)
      path=$2; n=$3; shift 3
      text=$*
      awk -v n="$n" -v t="$text" 'NR == n { print t; next } { print }' "$path" > "$path.tmp" && mv "$path.tmp" "$path"
      printf 'changed line %s of %s\n' "$n" "$path" ;;
    exit)
      exit "${2:-0}" ;;
    *)
      printf 'got: %s\n' "$line" ;;
  esac
done
