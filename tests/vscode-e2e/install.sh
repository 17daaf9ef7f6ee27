#!/usr/bin/env bash
# Install the pinned code-server and playwright-core (package-lock.json, and
# vscode-server.npm-shrinkwrap.json for code-server's VS Code) with nothing but the
# npm registry: code-server's own postinstall and @vscode/ripgrep's download are skipped, the
# native modules are built against the local Node headers, and ripgrep comes from PATH.
# Idempotent: node_modules/.cody-installed records the lock file it was built from.
#
# Needs node 20, npm, make, g++, python3, krb5-config (Debian: libkrb5-dev) and rg.
set -euo pipefail
cd "$(dirname "$0")"

export npm_config_nodedir="${npm_config_nodedir:-/usr}"  # node-gyp: headers in /usr/include/node
export npm_config_yes=true                               # node-pty's build asks otherwise
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

stamp=node_modules/.cody-installed
want="$(sha256sum package-lock.json vscode-server.npm-shrinkwrap.json install.sh | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "code-server is installed (node_modules up to date)"
  exit 0
fi
rg_binary="$(command -v rg)" || { echo "install.sh: rg (ripgrep) must be on PATH" >&2; exit 1; }
[ -d "$npm_config_nodedir/include/node" ] || {
  echo "install.sh: no Node headers in $npm_config_nodedir/include/node (set npm_config_nodedir)" >&2
  exit 1
}

rm -f "$stamp"
timeout 600 npm ci --ignore-scripts
timeout 300 npm rebuild argon2

# code-server's lib/vscode ships a shrinkwrap that misses tslib (npm ci refuses it); ours is
# that file completed by `npm install --omit=dev` once, so every run gets the same tree
cp vscode-server.npm-shrinkwrap.json node_modules/code-server/lib/vscode/npm-shrinkwrap.json
cd node_modules/code-server/lib/vscode
timeout 600 npm ci --omit=dev --ignore-scripts
# @vscode/ripgrep's postinstall downloads rg from GitHub unless bin/ exists
mkdir -p node_modules/@vscode/ripgrep/bin
cp "$rg_binary" node_modules/@vscode/ripgrep/bin/rg
timeout 900 npm rebuild
ln -sfn node_modules node_modules.asar  # what code-server's postinstall.sh does
cd - >/dev/null

echo "$want" > "$stamp"
echo "code-server installed"
