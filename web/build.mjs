// Bundles web/src into web/dist (committed: the Rust build embeds it and never needs the network).
// `node build.mjs --check` rebuilds into a temporary directory and fails when the result differs
// from the committed dist (CI runs it after `npm ci`).
import { build } from "esbuild";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const check = process.argv.includes("--check");
const out = check ? mkdtempSync(join(tmpdir(), "switchboard-dist-")) : join(here, "dist");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

await build({
  entryPoints: { app: join(here, "src/app.ts"), ops: join(here, "src/ops.ts") },
  outdir: out,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "eof",
  charset: "utf8",
  logLevel: "warning",
});
for (const f of ["index.html", "ops.html", "style.css", "favicon.svg"]) copyFileSync(join(here, "src", f), join(out, f));

if (check) {
  const dist = join(here, "dist");
  const names = (d) => readdirSync(d).sort();
  const differ = JSON.stringify(names(dist)) !== JSON.stringify(names(out)) ||
    names(out).some((f) => !readFileSync(join(out, f)).equals(readFileSync(join(dist, f))));
  rmSync(out, { recursive: true, force: true });
  if (differ) {
    console.error("web/dist differs from a build of web/src: run `npm run build` in web/ and commit web/dist");
    process.exit(1);
  }
  console.log("web/dist is the build of web/src");
}
