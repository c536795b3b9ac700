#!/bin/sh
# A base image for `benchmax build --base` made from Debian's archive, for machines that reach no image registry
# (only a Debian mirror): a minimal Debian bookworm root filesystem (debootstrap --variant=minbase), the Node.js 20 of
# this machine (its `node` binary and npm, as the official node:20-bookworm-slim image has them in /usr/local), this
# machine's CA bundle (so npm reaches the registry through the same TLS trust, a proxy's CA included), and the user
# `node` (uid 1000) the server stage runs as; imported into docker or podman under the given name.
#   sudo deploy/docker/debian-base.sh podman localhost/benchmax-base:bookworm-node20 [MIRROR]
#   benchmax build . --engine podman --base localhost/benchmax-base:bookworm-node20
# Needs root, debootstrap (apt-get install debootstrap) and Node 20 on PATH.
set -eu
ENGINE=${1:?usage: debian-base.sh docker|podman IMAGE [MIRROR]}
IMAGE=${2:?usage: debian-base.sh docker|podman IMAGE [MIRROR]}
MIRROR=${3:-http://deb.debian.org/debian}
NODE=$(command -v node)
case "$("$NODE" --version)" in
  v20.*) ;;
  *) echo "debian-base.sh: needs Node 20 on PATH, got $("$NODE" --version)" >&2; exit 64 ;;
esac
NPM_DIR=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/benchmax-debian-base.XXXXXX")
trap 'rm -rf "$ROOT"' EXIT
debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >"$ROOT.log" 2>&1 || { tail -20 "$ROOT.log" >&2; exit 1; }
rm -f "$ROOT.log"
install -m 0755 "$(readlink -f "$NODE")" "$ROOT/usr/local/bin/node"
mkdir -p "$ROOT/usr/local/lib/node_modules"
cp -a "$NPM_DIR" "$ROOT/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$ROOT/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$ROOT/usr/local/bin/npx"
CA=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
if [ -f "$CA" ]; then mkdir -p "$ROOT/etc/ssl/certs" && cp "$CA" "$ROOT/etc/ssl/certs/ca-certificates.crt"; fi
chroot "$ROOT" groupadd --gid 1000 node
chroot "$ROOT" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
chroot "$ROOT" apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin
tar -C "$ROOT" -c . | "$ENGINE" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' - "$IMAGE" >/dev/null
echo "$IMAGE"
