#!/usr/bin/env bash
# A minimal fake agent: prints its arguments, then a prompt, and echoes
# every line it reads until it sees "exit".
printf 'idle-agent started with %d args\n' "$#"
for arg in "$@"; do printf 'arg: %s\n' "$arg"; done
while true; do
  printf 'ready> '
  IFS= read -r line || exit 0
  [ "$line" = "exit" ] && exit 0
  printf 'got: %s\n' "$line"
done
