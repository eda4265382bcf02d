// Builds the inbox into dist/, which the askuser binary embeds (src/web/): one bundled script, one
// stylesheet, the icon and index.html. The output is committed; ./scripts/test rebuilds it and
// fails when it differs from what is committed, as it does for the generated clients.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";

const out = new URL("./dist/", import.meta.url).pathname;
rmSync(out, { recursive: true, force: true });
mkdirSync(`${out}assets`, { recursive: true });
await build({
  entryPoints: ["src/main.tsx"],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022", "chrome111", "firefox111", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  charset: "utf8",
  outfile: `${out}assets/app.js`,
  logLevel: "warning",
});
copyFileSync("src/app.css", `${out}assets/app.css`);
copyFileSync("src/icon.svg", `${out}assets/icon.svg`);
copyFileSync("src/index.html", `${out}index.html`);
