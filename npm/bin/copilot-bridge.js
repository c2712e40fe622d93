#!/usr/bin/env node
// The `copilot-bridge` command of the npm package: finds the native binary
// in the platform package npm installed as an optional dependency
// (@copilot-bridge/<platform>-<arch>) by module resolution and runs it with
// the same arguments, standard streams and exit status. No download, no
// postinstall: a platform without its package says so and how to fix it.
// Built and tested by npm/build.mjs and crates/cli/tests/cli_install.rs;
// docs/install.md.
"use strict";

const { spawn } = require("node:child_process");
const path = require("node:path");

// Every platform a package is built for: `${process.platform}-${process.arch}`.
const PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"];

function fail(message) {
  process.stderr.write(`copilot-bridge: ${message}\n`);
  process.exit(1);
}

const platform = `${process.platform}-${process.arch}`;
const fromSource =
  "build it from source instead: cargo install --locked --git https://github.com/copilot-bridge/copilot-bridge copilot-bridge (docs/install.md)";
if (!PLATFORMS.includes(platform)) {
  fail(`there is no build of copilot-bridge for ${platform} (there are: ${PLATFORMS.join(", ")}); ${fromSource}`);
}

const packageName = `@copilot-bridge/${platform}`;
let packageDir;
try {
  packageDir = path.dirname(require.resolve(`${packageName}/package.json`));
} catch {
  fail(
    `the package with the binary for this platform, ${packageName}, is not installed. ` +
      `npm installs it with copilot-bridge as an optional dependency; it was left out ` +
      `(installed with --omit=optional or --no-optional, or its download failed). ` +
      `Install both again: npm install -g copilot-bridge ${packageName}; or ${fromSource}`,
  );
}
const binary = path.join(packageDir, "bin", process.platform === "win32" ? "copilot-bridge.exe" : "copilot-bridge");

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
child.on("error", (err) => fail(`cannot run ${binary}: ${err.message}`));

// A signal to this launcher is the binary's too (a terminal's Ctrl-C reaches
// both; a `kill` of the launcher only reaches it).
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
    }
  });
}

child.on("exit", (code, signal) => {
  if (signal) {
    // Die the way the binary died, so the caller sees the same status.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
