// Starts `switchboard demo` for a test: the repo's agents_config.yaml with its five sample agents
// moved to free loopback ports, in-memory sessions, the supervisor on a free port.
// SWITCHBOARD_BIN overrides the binary (default: target/debug/switchboard, built by check.sh).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The admin token the demo is started with (the ops page's reload button needs one). */
export const ADMIN_TOKEN = "web-test-admin-token";

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/** Starts the demo; resolves to `{ base, stop() }` once it serves. */
export async function startDemo() {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-web-"));
  let config = readFileSync(join(repo, "agents_config.yaml"), "utf8")
    .replaceAll("schemas/", `${repo}/schemas/`)
    .replace(/^widgets_map: .*$/m, `widgets_map: ${repo}/widgets_map.json`);
  for (let n = 1; n <= 5; n++) {
    config = config.replaceAll(`127.0.0.1:910${n}/`, `127.0.0.1:${await freePort()}/`);
  }
  const path = join(dir, "agents_config.yaml");
  writeFileSync(path, config);
  const bin = process.env.SWITCHBOARD_BIN ?? join(repo, "target/debug/switchboard");
  const child = spawn(bin, ["demo", "--config", path, "--listen", "127.0.0.1:0", "--store", "memory://"], {
    env: { ...process.env, SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN, RUST_LOG: "warn" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const base = await new Promise((ok, fail) => {
    let out = "";
    child.once("exit", (code) => fail(new Error(`switchboard demo exited with ${code}: ${out}`)));
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const m = out.match(/supervisor on (http:\/\/\S+)/);
      if (m) ok(m[1]);
    });
  });
  child.removeAllListeners("exit");
  return {
    base,
    stop: () =>
      new Promise((ok) => {
        child.once("exit", ok);
        child.kill("SIGTERM");
      }),
  };
}
