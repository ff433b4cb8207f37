#!/usr/bin/env bash
# Runs a command inside the file-system sandbox a systemd unit gives its service, where no systemd
# runs (a container, CI): what `make deb-test` uses to check that the packaged user unit can write
# what `serve` writes. It reads the unit's [Service] section and, as root, in a mount namespace of
# its own (unshare), applies what these directives say:
#   ExecStartPre=+CMD   run first, outside the sandbox (as systemd runs a "+" command)
#   ProtectSystem=strict every mount read-only but /dev, /proc and /sys
#   ReadWritePaths=P... those paths writable again ("-P": skipped when missing; without "-", a
#                        missing one fails, as it fails the service)
#   PrivateTmp=true     an empty /tmp and /var/tmp
#   NoNewPrivileges=true setpriv --no-new-privs
# %h is the home given. Any other directive that changes the sandbox (Protect*, Private*,
# ReadOnlyPaths, InaccessiblePaths, ...) fails the run rather than being left out unsaid. The
# session bus's socket stays reachable through a private /tmp, as it is in a real session (at
# /run/user/UID/bus, outside /tmp), and so does UNIT_SANDBOX_KEEP, a folder of the caller's that
# holds what a real system has outside /tmp (the installed binary, the user's home) when the
# caller's own folder is under /tmp (a clone of the repository there).
#   unit-sandbox.sh UNIT HOME -- COMMAND [ARG...]
set -euo pipefail
unit=${1:?usage: unit-sandbox.sh UNIT HOME -- COMMAND...}; home=${2:?}; shift 2
[[ ${1:-} == -- ]] && shift
(( $# > 0 )) || { echo "unit-sandbox: no command" >&2; exit 2; }

strict=; private_tmp=; no_new_privs=; rw=(); pre=()
while IFS= read -r line; do
  line=${line%%#*}; [[ $line == *=* ]] || continue
  key=${line%%=*}; value=${line#*=}; value=${value//%h/$home}
  case $key in
    ProtectSystem) [[ $value == strict ]] && strict=1 || { echo "unit-sandbox: ProtectSystem=$value is not emulated" >&2; exit 2; } ;;
    ReadWritePaths) read -ra paths <<<"$value"; rw+=("${paths[@]}") ;;
    PrivateTmp) [[ $value == true || $value == yes ]] && private_tmp=1 ;;
    NoNewPrivileges) [[ $value == true || $value == yes ]] && no_new_privs=1 ;;
    ExecStartPre) [[ $value == +* ]] || { echo "unit-sandbox: ExecStartPre without + is not emulated" >&2; exit 2; }; pre+=("${value#+}") ;;
    Protect*|Private*|ReadOnlyPaths|InaccessiblePaths|TemporaryFileSystem|BindPaths|BindReadOnlyPaths|RootDirectory|RootImage|MountFlags)
      echo "unit-sandbox: $key is not emulated" >&2; exit 2 ;;
  esac
done < <(sed -n '/^\[Service\]/,/^\[/p' "$unit")

for cmd in "${pre[@]}"; do echo "+ (ExecStartPre, outside the sandbox) $cmd" >&2; eval "$cmd"; done

bus=
if [[ ${DBUS_SESSION_BUS_ADDRESS:-} =~ unix:path=(/tmp/[^,]+) ]]; then bus=${BASH_REMATCH[1]}; fi
keep=
case ${UNIT_SANDBOX_KEEP:-} in /tmp/* | /var/tmp/*) keep=$(readlink -f "$UNIT_SANDBOX_KEEP") ;; esac
# Where the real /tmp and /var/tmp are held while the private ones are mounted: empty folders,
# outside both (only mount points), left for the caller's clean-up (the command replaces this
# process, so that its PID is the service's).
stash=$(mktemp -d /dev/shm/unit-sandbox-tmp.XXXXXX)

# Inside the namespace: the writable paths become mount points first (a bind onto themselves)
# so that they keep their own flags when every other mount is made read-only.
setup=$(cat <<'SH'
set -euo pipefail
stash=$1 bus=$2 keep=$3 strict=$4 private_tmp=$5 no_new_privs=$6; shift 6
rw=(); while [[ $1 != -- ]]; do rw+=("$1"); shift; done; shift
if [[ -n $private_tmp ]]; then
  mkdir -p "$stash/tmp" "$stash/var-tmp"
  mount --bind /tmp "$stash/tmp"
  mount --bind /var/tmp "$stash/var-tmp"
  mount -t tmpfs -o mode=1777 tmpfs /tmp
  mount -t tmpfs -o mode=1777 tmpfs /var/tmp
  if [[ -n $bus ]]; then mkdir -p "$(dirname "$bus")"; touch "$bus"; mount --bind "$stash/tmp${bus#/tmp}" "$bus"; fi
  case $keep in
  /tmp/*) mkdir -p "$keep"; mount --rbind "$stash/tmp${keep#/tmp}" "$keep" ;;
  /var/tmp/*) mkdir -p "$keep"; mount --rbind "$stash/var-tmp${keep#/var/tmp}" "$keep" ;;
  esac
  umount -l "$stash/tmp" "$stash/var-tmp"
fi
for p in "${rw[@]}"; do
  opt=; [[ $p == -* ]] && { opt=1; p=${p#-}; }
  if [[ ! -e $p ]]; then [[ -n $opt ]] && continue; echo "unit-sandbox: ReadWritePaths $p does not exist (the service would fail)" >&2; exit 1; fi
  mount --bind "$p" "$p"
done
if [[ -n $strict ]]; then
  keep=" /dev /proc /sys /tmp /var/tmp "
  for p in "${rw[@]}"; do keep+="${p#-} "; done
  while read -r mnt; do
    case $mnt in /dev|/dev/*|/proc|/proc/*|/sys|/sys/*) continue ;; esac
    [[ $keep == *" $mnt "* ]] && continue
    [[ -n $private_tmp && -n $bus && $mnt == "$bus" ]] && continue
    [[ -n $keep && $mnt == "$keep" ]] && continue
    mount -o remount,bind,ro "$mnt" 2>/dev/null || true
  done < <(awk '{print $5}' /proc/self/mountinfo | sed 's/\\040/ /g' | sort -u)
fi
if [[ -n $no_new_privs ]] && command -v setpriv >/dev/null; then exec setpriv --no-new-privs -- "$@"; fi
exec "$@"
SH
)
exec unshare --mount --propagation private -- bash -c "$setup" unit-sandbox "$stash" "$bus" "$keep" "$strict" "$private_tmp" "$no_new_privs" "${rw[@]}" -- "$@"
