#!/bin/sh
# The build steps of the container image, in one script so that they run the same everywhere:
# the Dockerfile runs it, .ci/deploy-check runs it in a Debian root file system built with
# mmdebstrap (containers cannot run on the CI machine), and an operator installing with systemd
# runs it on the server (docs/operating.md).
#
#   deploy/build.sh app SRC OUT   build the checkout SRC and put what the hub needs to run into OUT
#                                 (needs node and npm; the npm registry, as npm is configured)
#   deploy/build.sh user [DIR]    create the user damhub (uid and gid 10001) and its private data
#                                 directory DIR (default /var/lib/damhub); run as root
#
# POSIX sh: the slim Node image has no bash.
set -eu

DAMHUB_UID=10001

usage() {
  echo "usage: deploy/build.sh app SRC OUT | deploy/build.sh user [DATA_DIR]" >&2
  exit 2
}

build_app() {
  src=$1
  out=$2
  [ -f "$src/package.json" ] || { echo "build.sh: $src is not a damhub checkout (no package.json)" >&2; exit 2; }
  case "$out" in /*) ;; *) echo "build.sh: OUT must be an absolute path, not $out" >&2; exit 2 ;; esac
  if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
    echo "build.sh: $out is not empty; give an empty or new directory" >&2
    exit 2
  fi
  cd "$src"
  echo "== build.sh: node $(node --version), npm $(npm --version)"

  # Exactly the locked tree, install scripts not run. The runtime needs none: better-sqlite3 13
  # ships its Node 22+ binary inside the package, sharp's libvips and onnxruntime-node's CPU
  # runtime arrive as package files, and esbuild finds its platform package without its
  # postinstall. The one script package.json approves compiles better-sqlite3-node20, the Node 20
  # driver this image's Node never loads; run, it would try a download from outside the npm
  # registry and then a compiler the slim image does not have.
  npm ci --ignore-scripts --no-audit --no-fund
  # TypeScript to dist/, the client and the picker bundle (the demo page serves it).
  npm run build --silent
  # Only the production dependencies stay (the compiled hub imports no dev dependency:
  # dependency-cruiser holds src/ to that).
  npm prune --omit=dev --ignore-scripts --no-audit --no-fund

  # onnxruntime-node carries its runtime for Linux, macOS and Windows on x64 and arm64 (≈ 290 MB);
  # the hub loads only this platform's.
  platform=$(node -p process.platform)
  arch=$(node -p process.arch)
  for napi in node_modules/onnxruntime-node/bin/napi-v*; do
    [ -d "$napi" ] || continue
    for os_dir in "$napi"/*; do
      if [ "$(basename "$os_dir")" != "$platform" ]; then rm -rf "$os_dir"; continue; fi
      for arch_dir in "$os_dir"/*; do
        [ "$(basename "$arch_dir")" = "$arch" ] || rm -rf "$arch_dir"
      done
    done
  done

  # What runs: the CLI, the compiled hub, the demo page's static files, the built client and
  # picker (node_modules/@damhub/* link to them), the dependencies, and this script and the
  # readiness check (the image's later stage and HEALTHCHECK use them). Not the sources, tests,
  # benchmarks or their compiled forms.
  mkdir -p "$out/bin" "$out/dist" "$out/src/demo" "$out/deploy" "$out/packages/client" "$out/packages/picker"
  cp package.json package-lock.json LICENSE README.md CHANGELOG.md "$out/"
  # The CLI and the module it imports (bin/start.js and bin/build-stamp.js are npm start's, which builds).
  cp bin/damhub.js bin/orphan-watch.js "$out/bin/"
  cp -R dist/src "$out/dist/"
  cp -R src/demo/static "$out/src/demo/"
  for p in client picker; do
    cp "packages/$p/package.json" "$out/packages/$p/"
    cp -R "packages/$p/dist" "$out/packages/$p/"
  done
  cp deploy/build.sh deploy/readyz.mjs "$out/deploy/"
  # -P keeps the workspace links (node_modules/@damhub/client -> ../../packages/client) as links.
  cp -RP node_modules "$out/"
  echo "== build.sh: $out holds $(du -sh "$out" | cut -f1) ($(du -sh "$out/node_modules" | cut -f1) of it node_modules)"
}

add_user() {
  data=${1:-/var/lib/damhub}
  [ "$(id -u)" = 0 ] || { echo "build.sh: user: run as root" >&2; exit 1; }
  # A fixed uid and gid, so that a volume or a host directory can be given to it in advance
  # (chown 10001:10001) and Kubernetes' runAsNonRoot can check the numeric USER.
  getent group damhub >/dev/null || groupadd --gid "$DAMHUB_UID" damhub
  getent passwd damhub >/dev/null || useradd --uid "$DAMHUB_UID" --gid damhub --no-create-home \
    --home-dir "$data" --shell /usr/sbin/nologin --comment "damhub hub" damhub
  # 0700: the hub keeps its keys here, and tightens a looser directory at start anyway. The
  # library/ inside exists already so that a volume mounted there (renditions shared by cluster
  # nodes) starts with the right owner.
  install -d -o damhub -g damhub -m 0700 "$data" "$data/library"
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case "$cmd" in
  app) [ $# -eq 2 ] || usage; build_app "$1" "$2" ;;
  user) [ $# -le 1 ] || usage; add_user "$@" ;;
  *) usage ;;
esac
