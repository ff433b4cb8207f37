#!/usr/bin/env bash
# Installs what a Debian/Ubuntu machine lacks to build, run and test Codex Relay.
# Checks each package with dpkg first, so a machine that has everything installs nothing
# and needs no network. Works as root (CI) or through sudo.
#   install-deps.sh build   cgo headers for Fyne (go-gl, glfw) and software OpenGL
#   install-deps.sh test    build + Secret Service (gnome-keyring), D-Bus, Xvfb, tmux (codex-e2e drives the Codex TUI),
#                           and Node.js with npm when there is no node (the relay's Node SDK test, codex-e2e's Codex)
#   install-deps.sh cross   build + the mingw-w64 cross compiler (make cross: the Windows build)
#   install-deps.sh package test + the .deb's install test (curl) and the MSI's tools (wixl; msitools: msiinfo, msiextract)
#   install-deps.sh shot    test + what screenshots and make idle need (imagemagick, xdotool, a tray host, gdbus)
set -euo pipefail

build=(gcc pkg-config libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev
  libxinerama-dev libxi-dev libxxf86vm-dev libgl1-mesa-dri)
test=(gnome-keyring dbus dbus-x11 libsecret-tools xvfb xauth tmux)
cross=(gcc-mingw-w64-x86-64)
package=(curl msitools wixl)
shot=(imagemagick x11-utils xdotool fonts-dejavu-core haskell-gtk-sni-tray-utils python3 libglib2.0-bin procps)

want=("${build[@]}")
case "${1:-build}" in
  build) ;;
  test) want+=("${test[@]}") ;;
  cross) want+=("${cross[@]}") ;;
  package) want+=("${test[@]}" "${package[@]}") ;;
  shot) want+=("${test[@]}" "${shot[@]}") ;;
  *) echo "usage: $0 build|test|cross|package|shot" >&2; exit 2 ;;
esac
# A node from anywhere (Debian, NodeSource, nvm) will do: Debian's is installed only when there is none.
case "${1:-build}" in
  test | package | shot) command -v node >/dev/null 2>&1 || want+=(nodejs npm) ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v go >/dev/null 2>&1; then
  echo "Go is not on PATH: install Go 1.26 or newer (go.mod asks for it) from https://go.dev/dl/ first." >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine's package lists are empty; update once before installing.
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
