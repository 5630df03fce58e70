#!/bin/bash
# rounds-huge.sh ROUNDS OUT SPEC...: rounds.sh with every GGUF re-read into 2 MiB pages
# (recache.py) right before its llama-bench run, so both tools read weights through 2 MiB pages.
RECACHE=1 exec "$(dirname "$0")/rounds.sh" "$@"
