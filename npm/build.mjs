#!/usr/bin/env node
// Builds the npm packages of copilot-bridge from release binaries, the way
// Codex ships: the package `copilot-bridge` (the launcher, bin/copilot-bridge.js,
// with one optional dependency per platform) and a package
// `@copilot-bridge/<platform>` per binary given, each packed with `npm pack`.
//
//   node npm/build.mjs --out DIR [--version V] PLATFORM=BINARY...
//
// PLATFORM is one of linux-x64, linux-arm64, darwin-x64, darwin-arm64,
// win32-x64; BINARY the copilot-bridge built for it, e.g.
//   cargo build --release --locked -p copilot-bridge
//   node npm/build.mjs --out dist/npm linux-x64=target/release/copilot-bridge
// V defaults to the workspace's version (Cargo.toml). The paths of the
// tarballs are printed, the launcher's first. Nothing is fetched from a
// registry. Tested by crates/cli/tests/cli_install.rs; docs/install.md.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const PLATFORMS = {
  "linux-x64": { os: "linux", cpu: "x64", name: "Linux x64" },
  "linux-arm64": { os: "linux", cpu: "arm64", name: "Linux arm64" },
  "darwin-x64": { os: "darwin", cpu: "x64", name: "macOS x64" },
  "darwin-arm64": { os: "darwin", cpu: "arm64", name: "macOS arm64" },
  "win32-x64": { os: "win32", cpu: "x64", name: "Windows x64" },
};

function fail(message) {
  process.stderr.write(`npm/build.mjs: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = { out: null, version: null, binaries: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--out" || arg === "--version") {
      const value = argv[++i];
      if (!value) fail(`${arg} needs a value`);
      args[arg.slice(2)] = value;
    } else if (arg.includes("=")) {
      const at = arg.indexOf("=");
      const platform = arg.slice(0, at);
      if (!PLATFORMS[platform]) {
        fail(`unknown platform ${JSON.stringify(platform)}; one of ${Object.keys(PLATFORMS).join(", ")}`);
      }
      args.binaries.push({ platform, binary: path.resolve(arg.slice(at + 1)) });
    } else {
      fail(`unexpected argument ${JSON.stringify(arg)}; usage: node npm/build.mjs --out DIR [--version V] PLATFORM=BINARY...`);
    }
  }
  if (!args.out) fail("--out DIR is required");
  return args;
}

/// The workspace's version: `version = "…"` in Cargo.toml's [workspace.package].
function workspaceVersion() {
  const cargo = fs.readFileSync(path.join(here, "..", "Cargo.toml"), "utf8");
  const section = cargo.split(/^\[workspace\.package\]\s*$/m)[1] ?? "";
  const match = section.match(/^version\s*=\s*"([^"]+)"/m);
  if (!match) fail("no version in Cargo.toml's [workspace.package]");
  return match[1];
}

function writeJson(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/// `npm pack` of `dir` into `out`: the tarball's path.
function pack(dir, out) {
  const json = execFileSync("npm", ["pack", "--json", "--pack-destination", out], {
    cwd: dir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [{ filename }] = JSON.parse(json);
  return path.join(out, filename);
}

const args = parseArgs(process.argv.slice(2));
const version = args.version ?? workspaceVersion();
const out = path.resolve(args.out);
const stage = path.join(out, "stage");
fs.rmSync(stage, { recursive: true, force: true });
fs.mkdirSync(stage, { recursive: true });

// The launcher's package: this directory's package.json at `version`, every
// platform package an optional dependency of exactly that version.
const launcher = JSON.parse(fs.readFileSync(path.join(here, "package.json"), "utf8"));
launcher.version = version;
launcher.optionalDependencies = Object.fromEntries(
  Object.keys(PLATFORMS).map((platform) => [`@copilot-bridge/${platform}`, version]),
);
const launcherDir = path.join(stage, "copilot-bridge");
fs.mkdirSync(path.join(launcherDir, "bin"), { recursive: true });
writeJson(path.join(launcherDir, "package.json"), launcher);
fs.copyFileSync(path.join(here, "bin", "copilot-bridge.js"), path.join(launcherDir, "bin", "copilot-bridge.js"));
fs.chmodSync(path.join(launcherDir, "bin", "copilot-bridge.js"), 0o755);
fs.copyFileSync(path.join(here, "README.md"), path.join(launcherDir, "README.md"));
const tarballs = [pack(launcherDir, out)];

for (const { platform, binary } of args.binaries) {
  const { os, cpu, name } = PLATFORMS[platform];
  if (!fs.statSync(binary, { throwIfNoEntry: false })?.isFile()) {
    fail(`${platform}: ${binary} is not a file`);
  }
  const dir = path.join(stage, platform);
  const exe = os === "win32" ? "copilot-bridge.exe" : "copilot-bridge";
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  fs.copyFileSync(binary, path.join(dir, "bin", exe));
  fs.chmodSync(path.join(dir, "bin", exe), 0o755);
  writeJson(path.join(dir, "package.json"), {
    name: `@copilot-bridge/${platform}`,
    version,
    description: `The copilot-bridge binary for ${name}, installed by the package copilot-bridge.`,
    license: launcher.license,
    repository: launcher.repository,
    os: [os],
    cpu: [cpu],
    files: [`bin/${exe}`],
    preferUnplugged: true,
  });
  fs.writeFileSync(
    path.join(dir, "README.md"),
    `# @copilot-bridge/${platform}\n\nThe copilot-bridge binary for ${name}. Install the package \`copilot-bridge\`, which picks it.\n`,
  );
  tarballs.push(pack(dir, out));
}

fs.rmSync(stage, { recursive: true, force: true });
process.stdout.write(`${tarballs.join("\n")}\n`);
