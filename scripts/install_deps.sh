#!/usr/bin/env bash
# Installs ignis's build and test dependencies on Debian 12 (Debian packages only). Idempotent.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      nlohmann-json3-dev libpcre2-dev libutf8proc-dev libboost-dev libcurl4-openssl-dev libssl-dev
      libcli11-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
      clang libclang-rt-14-dev python3 curl)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
