#!/usr/bin/env bash
# Installs the Debian packages weft needs, if any is missing (Debian 12, root).
set -euo pipefail
PACKAGES="build-essential cmake ninja-build pkg-config liblua5.4-dev libopenmpi-dev openmpi-bin libopenblas-dev libcjson-dev libpng-dev libjpeg62-turbo-dev libclang-dev"
missing=()
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "weft: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
