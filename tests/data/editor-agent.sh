#!/usr/bin/env bash
# A scripted agent for the editor suites (VS Code, Neovim, Helix): it shows
# its task, then obeys one command per line, typed in its terminal or sent
# with `owt send`, in its own checkout (the current directory):
#   edit FILE LINE TEXT   replace line LINE (1-based) of FILE with TEXT
#   revert                drop every uncommitted change
#   commit MESSAGE        commit everything
#   signal EVENT          report its status: `owt hook --event EVENT`
#                         (working, waiting, blocked, done)
#   work TEXT             show a spinner line `⠹ TEXT` just above the
#                         prompt (owt reads a line-mode screen as working
#                         while a spinner is on the prompt's line or the
#                         one above it)
#   exit                  quit
# Anything else is echoed as `got: LINE`. Lines are numbered from 1; a
# command ends with `ok #N: COMMAND` (or `error #N: …`) before the next
# prompt, so a test waits for that line instead of guessing how long the
# command takes.
task="${1:-(no task)}"
printf 'editor-agent: %s\n' "${task%%$'\n'*}"
n=0
while true; do
  printf 'ready> '
  IFS= read -r line || exit 0
  n=$((n + 1))
  read -r verb rest <<<"$line"
  case "$verb" in
    exit) exit 0 ;;
    edit)
      # TEXT keeps its indentation: everything after `LINE `.
      if [[ "$rest" =~ ^([^ ]+)\ ([1-9][0-9]*)\ (.*)$ ]] && [ -f "${BASH_REMATCH[1]}" ]; then
        file="${BASH_REMATCH[1]}" at="${BASH_REMATCH[2]}" text="${BASH_REMATCH[3]}"
        mapfile -t lines <"$file"
        lines[at - 1]="$text"
        printf '%s\n' "${lines[@]}" >"$file"
        printf 'ok #%d: edit %s %s\n' "$n" "$file" "$at"
      else
        printf 'error #%d: edit needs FILE LINE TEXT, got: %s\n' "$n" "$rest"
      fi
      ;;
    revert)
      git checkout -q -- . && git clean -qfd && printf 'ok #%d: revert\n' "$n" || printf 'error #%d: revert failed\n' "$n"
      ;;
    commit)
      git add -A && git commit -qm "${rest:-work}" && printf 'ok #%d: commit\n' "$n" || printf 'error #%d: commit failed\n' "$n"
      ;;
    signal)
      "${OWT:-owt}" hook --event "$rest" && printf 'ok #%d: signal %s\n' "$n" "$rest" || printf 'error #%d: signal failed\n' "$n"
      ;;
    work) printf 'ok #%d: work\n⠹ %s (esc to interrupt)\n' "$n" "$rest" ;;
    *) printf 'got: %s\n' "$line" ;;
  esac
done
