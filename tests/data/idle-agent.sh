#!/usr/bin/env bash
# A minimal fake agent: prints its arguments, then a prompt, and echoes
# every line it reads until it sees "exit"; "paint" is answered with a red
# word (owt types control characters as visible escapes, so colour must come
# from the agent itself).
printf 'idle-agent started with %d args\n' "$#"
for arg in "$@"; do printf 'arg: %s\n' "$arg"; done
while true; do
  printf 'ready> '
  IFS= read -r line || exit 0
  [ "$line" = "exit" ] && exit 0
  if [ "$line" = "paint" ]; then
    printf 'got: \033[31mred word\033[0m\n'
    continue
  fi
  printf 'got: %s\n' "$line"
done
