#!/usr/bin/env bash
# Regenerates the four 64x64 tray icons from icon.png (ImageMagick 6 `convert`):
#   tray-serving   the app icon as is
#   tray-degraded  with an amber badge (some accounts cooling down or needing sign-in)
#   tray-stopped   with a red badge and a bar (no usable account, or the listener failed)
#   tray-paused    greyed out, with a grey pause badge
set -euo pipefail
cd "$(dirname "$0")"
small=(icon.png -filter Lanczos -resize 64x64)
badge=(-stroke white -strokewidth 4 -draw "circle 47,47 47,33" -stroke none -fill white)
convert "${small[@]}" -depth 8 PNG32:tray-serving.png
convert "${small[@]}" -fill '#F5A623' "${badge[@]}" -depth 8 PNG32:tray-degraded.png
convert "${small[@]}" -fill '#E0352B' "${badge[@]}" -draw "rectangle 40,44 54,50" -depth 8 PNG32:tray-stopped.png
convert "${small[@]}" -colorspace Gray -colorspace sRGB -level 0%,85% -fill '#3C3C3C' "${badge[@]}" \
  -draw "rectangle 41,40 45,54" -draw "rectangle 49,40 53,54" -depth 8 PNG32:tray-paused.png
