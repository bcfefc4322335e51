#!/usr/bin/env bash
# tests/gpu/bundle.sh [DIR]: run on a Debian 12 (bookworm, amd64) machine with
# apt before a GPU session.  Downloads (apt-get download; nothing is installed)
# the .deb files of every build and run dependency of weft that the bare GPU
# image may lack, into DIR (default .gpu-deps, git-ignored), with a manifest
# that tests/gpu/deps_env.sh reads there to unpack only what that machine lacks.
#
#   bash tests/gpu/bundle.sh
#   then: run(command="OUT=$OUT bash tests/gpu/check.sh", carry=[".gpu-deps"], timeout_s=540)
#
# Groups (one per dependency the build looks up), each with its "top" packages
# (unpacked whenever the machine lacks that dependency) and the library closure
# of their run-time packages ("lib": unpacked only where the machine lacks one
# of the package's sonames).  The -dev packages are taken without their own
# dependencies (static-linking and Fortran pieces nobody here uses).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=${1:-.gpu-deps}

# group: top packages (runtime ones first; their dependencies are followed)
GROUPS_SPEC=(
  "pkgconf: pkgconf-bin libpkgconf3"
  "lua: liblua5.4-0 liblua5.4-dev"
  "openblas: libopenblas0-pthread libopenblas-pthread-dev"
  "cjson: libcjson1 libcjson-dev"
  "mpi: libopenmpi3 openmpi-bin openmpi-common libopenmpi-dev"
)
# never bundled: the C/C++ runtime every system has (an older copy on
# LD_LIBRARY_PATH would break the machine's own programs); ssh (one node, no
# remote launch); hwloc's plugins (X11, OpenCL, NVIDIA control: optional, dlopened)
CUT="libc6 libgcc-s1 libstdc++6 gcc-12-base libgomp1 libatomic1 debconf
     openssh-client libhwloc-plugins adduser"

command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
  { echo "bundle.sh: needs a Debian machine (apt-get, dpkg-deb)" >&2; exit 2; }
# the sonames in the manifest decide what the GPU machine unpacks: without
# them every library would be unpacked and shadow the machine's own
command -v readelf >/dev/null || { echo "bundle.sh: needs readelf (binutils)" >&2; exit 2; }
[ "$(dpkg --print-architecture)" = amd64 ] ||
  { echo "bundle.sh: the GPU machine is amd64; this machine is $(dpkg --print-architecture)" >&2; exit 2; }

is_cut() { case " $(echo $CUT) " in *" $1 "*) return 0 ;; esac; return 1; }
# Essential or Priority: required packages are on every Debian/Ubuntu base
is_base() {
  apt-cache show --no-all-versions "$1" 2>/dev/null |
    grep -q -E '^(Essential: yes|Priority: required)'
}
# the direct dependencies of a package (Depends, Pre-Depends), the first of
# each set of alternatives, a virtual package's first provider
deps_of() {
  apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "$1" | awk '
      /^ *\|?(Pre)?Depends:/ {
        alt = ($1 ~ /^\|/)
        name = $2
        if (skip) { skip = alt; next }     # a later alternative of a taken set
        if (name ~ /^</) { virt = 1; skip = alt; next }
        print name; skip = alt; next }
      /^    [^ ]/ { if (virt) { print $1; virt = 0 } next }
      { virt = 0 }'
}
# the closure of the given packages, minus the cut and base ones
closure() {
  local -A seen=()
  local queue=("$@") p d
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}; queue=("${queue[@]:1}")
    [ -n "${seen[$p]:-}" ] && continue
    seen[$p]=1
    if is_cut "$p" || is_base "$p"; then continue; fi
    echo "$p"
    for d in $(deps_of "$p"); do [ -n "${seen[$d]:-}" ] || queue+=("$d"); done
  done
}

mkdir -p "$DEST"
rm -f "$DEST"/*.deb "$DEST/manifest.txt"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-bundle.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
manifest=$tmp/manifest.txt
: >"$manifest"
for spec in "${GROUPS_SPEC[@]}"; do
  group=${spec%%:*}
  tops=(${spec#*:})
  runtime=()
  for p in "${tops[@]}"; do case $p in *-dev) ;; *) runtime+=("$p") ;; esac; done
  for p in $( (closure "${runtime[@]}"; printf '%s\n' "${tops[@]}") | sort -u); do
    role=lib
    case " ${tops[*]} " in *" $p "*) role=top ;; esac
    echo "$group $role $p" >>"$manifest"
  done
done

echo "bundle.sh: downloading $(cut -d' ' -f3 "$manifest" | sort -u | wc -l) packages into $DEST"
(cd "$DEST" && apt-get download -q -o APT::Sandbox::User=root $(cut -d' ' -f3 "$manifest" | sort -u)) >/dev/null

# manifest.txt: GROUP ROLE PACKAGE FILE [SONAME...] (the sonames of the shared
# libraries the package holds, read from the libraries themselves)
while read -r group role p; do
  deb=$(cd "$DEST" && ls "${p}"_*.deb | head -1)
  rm -rf "$tmp/x"
  dpkg-deb -x "$DEST/$deb" "$tmp/x"
  sonames=$(find "$tmp/x" -type f -name 'lib*.so*' | while read -r f; do
              readelf -d "$f" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'
            done | sort -u | tr '\n' ' ')
  echo "$group $role $p $deb $sonames"
done <"$manifest" >"$DEST/manifest.txt"

# what carries: the folder, and the working tree that travels with it (64 MiB in all)
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
untracked=$(git ls-files -z --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -1 | cut -f1)
bundle=$(du -cb "$DEST" | tail -1 | cut -f1)
total=$((tree + ${untracked:-0} + bundle))
awk -v d="$DEST" -v n="$(ls "$DEST"/*.deb | wc -l)" -v b="$bundle" -v t="$total" 'BEGIN {
  printf "bundle.sh: %s holds %d .deb files, %.1f MiB; with the working tree %.1f MiB of the 64 MiB a run carries\n",
    d, n, b / 1048576, t / 1048576 }'
[ "$total" -lt $((60 * 1048576)) ] || { echo "bundle.sh: too big to carry" >&2; exit 1; }
