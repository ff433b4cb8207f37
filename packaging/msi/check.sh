#!/usr/bin/env bash
# Validates the MSI with msitools (no Windows here): its tables, the File table's codexrelay.exe (size,
# and the extracted copy byte for byte against the build), the Start menu shortcut with the icon, the
# per-user install folder, the version, the license and the removal note, and the start-at-login value
# off by default.
# Usage: check.sh PATH.msi PATH/codexrelay.exe VERSION
set -euo pipefail
msi=${1:?usage: check.sh PATH.msi EXE VERSION}; exe=${2:?}; version=${3:?}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "msi check: $*" >&2; exit 1; }
row() { msiinfo export "$msi" "$1" | tail -n +4 | tr -d '\r'; }   # a table's rows, without its 3 header lines or CRs

tables=$(msiinfo tables "$msi")
for t in File Component Directory Shortcut Icon Registry Feature FeatureComponents Property Media; do
  grep -qx "$t" <<<"$tables" || fail "no $t table"
done
size=$(stat -c %s "$exe")
row File | awk -F'\t' -v s="$size" '$1=="codexrelay.exe" && $3=="codexrelay.exe" && $4==s {ok=1} END {exit !ok}' ||
  fail "the File table has no codexrelay.exe of $size bytes: $(row File)"
row Shortcut | awk -F'\t' '$2=="ProgramMenuFolder" && $3=="Codex Relay" && $5=="[INSTALLDIR]codexrelay.exe" && $9=="codexrelay.ico" {ok=1} END {exit !ok}' ||
  fail "no Start menu shortcut with the icon: $(row Shortcut)"
row Directory | grep -qP '^ProgramsDir\tLocalAppDataFolder\tPrograms$' || fail "not installed under %LOCALAPPDATA%\\Programs"
props=$(row Property)
grep -qP '^ProductVersion\t\Q'"$version"'\E$' <<<"$props" || fail "ProductVersion is not $version"
grep -qP '^MSIINSTALLPERUSER\t1$' <<<"$props" && grep -qP '^ALLUSERS\t2$' <<<"$props" || fail "not a per-user package"
grep -qP '^ARPPRODUCTICON\tcodexrelay.ico$' <<<"$props" || fail "no icon in Apps & features"
grep -qP '^ARPCOMMENTS\tMIT License\. Before uninstalling, run: codexrelay codex-config --remove' <<<"$props" ||
  fail "Apps & features states neither the license nor codex-config --remove"
row File | awk -F'\t' '$1=="LICENSE.txt" {ok=1} END {exit !ok}' || fail "no LICENSE.txt"
row Feature | awk -F'\t' '$1=="StartAtLogin" && $6>1 {ok=1} END {exit !ok}' || fail "start at login is not off by default"
row Registry | grep -qP '\tSoftware\\Microsoft\\Windows\\CurrentVersion\\Run\tCodex Relay\t' || fail "no Run value for start at login"
msiextract -C "$tmp" "$msi" >/dev/null
got=$(find "$tmp" -name codexrelay.exe | head -n 1)
[[ -n $got ]] && cmp -s "$got" "$exe" || fail "the extracted codexrelay.exe differs from $exe"
echo "msi check: $(basename "$msi") ($(stat -c %s "$msi") bytes) holds codexrelay.exe $version ($size bytes, identical), a per-user install, the Start menu entry and icon, the MIT license and the removal note, start at login off by default"
