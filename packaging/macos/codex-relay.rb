# Homebrew cask for Codex Relay (`brew install --cask codex-relay` once it is in a tap). `make macos`
# writes the version; the sha256 is the release zip's, filled in on a Mac when the zip is made
# (see packaging/MACOS.md).
cask "codex-relay" do
  version "@VERSION@"
  sha256 :no_check # replace with the release zip's sha256 when publishing

  url "https://github.com/codexrelay/codexrelay/releases/download/v#{version}/CodexRelay-#{version}-macos-arm64.zip"
  name "Codex Relay"
  desc "OpenAI-compatible routing relay for the Codex CLI, in the menu bar"
  homepage "https://github.com/codexrelay/codexrelay"

  depends_on macos: ">= :big_sur"
  depends_on arch: :arm64

  app "Codex Relay.app"
  binary "#{appdir}/Codex Relay.app/Contents/MacOS/codexrelay"

  uninstall launchctl: "io.github.codexrelay",
            quit:      "io.github.codexrelay"

  zap trash: [
    "~/Library/LaunchAgents/io.github.codexrelay.plist",
    "~/Library/Application Support/codexrelay",
  ]
end
