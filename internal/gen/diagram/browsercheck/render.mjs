// Renders Mermaid diagrams with the real Mermaid library in headless
// Chromium and reports what each one shows. Driven by TestBrowserRender
// (gen/diagram/browser_test.go) through check.sh; it asserts nothing itself.
//
// stdin:  {"chromium": path,
//          "mermaid": [{"version": ..., "path": path to mermaid.min.js}],
//          "diagrams": [{"name": ..., "source": ...}]}
// stdout: {"browser": version, "results": [{"version", "name", "error",
//          "width", "height", "boxes": [[line, ...]], "labels": [text],
//          "overlaps": [{"kind", "a", "b"}]}]}
//
// Each Mermaid version renders every diagram in a page of its own.
//
// The modules come from DIAGRAM_CHECK_MODULES (check.sh installs them
// outside the repository), so nothing here needs a package.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const modules = process.env.DIAGRAM_CHECK_MODULES;
if (!modules) {
  console.error('render.mjs: DIAGRAM_CHECK_MODULES is not set; run it through check.sh');
  process.exit(2);
}
const puppeteer = createRequire(path.join(modules, 'noop.js'))('puppeteer-core');

const request = JSON.parse(fs.readFileSync(0, 'utf8'));

// A fresh profile, so no state of an earlier run (or of the user's own
// browser) changes the render; removed afterwards.
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'agentwire-chromium-'));
const browser = await puppeteer.launch({
  executablePath: request.chromium,
  pipe: true, // DevTools over a pipe: no port is opened
  ignoreDefaultArgs: true, // exactly these flags
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    `--user-data-dir=${profile}`, 'about:blank',
  ],
});
try {
  const results = [];
  for (const bundle of request.mermaid) {
    const page = await browser.newPage();
    await page.setContent('<!doctype html><html><head><meta charset="utf-8"></head><body><div id="out"></div></body></html>');
    await page.addScriptTag({ path: bundle.path });
    await page.evaluate(() => globalThis.mermaid.initialize({ startOnLoad: false }));

    for (const [i, d] of request.diagrams.entries()) {
      const r = await page.evaluate(async (id, source) => {
        try {
          const { svg } = await globalThis.mermaid.render(id, source);
          const out = document.getElementById('out');
          out.innerHTML = svg;
          const el = out.querySelector('svg');
          const vb = el.viewBox.baseVal;
          // Lay out at the natural size, so boxes are in diagram units.
          el.style.maxWidth = 'none';
          el.setAttribute('width', vb.width);
          el.setAttribute('height', vb.height);

          // What a reader sees in an element, line by line: HTML labels keep
          // their line breaks in innerText; SVG text labels have one <text> per
          // line. A box with a title has one label for the title and one for
          // the lines beneath it.
          const lines = (g) => {
            const html = [...g.querySelectorAll('foreignObject > *')];
            const text = html.length > 0 ? html.map((h) => h.innerText) : [...g.querySelectorAll('text')].map((t) => t.textContent);
            return text.flatMap((t) => t.split('\n')).map((s) => s.trim()).filter((s) => s !== '');
          };
          const rect = (e) => e.getBoundingClientRect();
          const boxes = [...el.querySelectorAll('g.node')].map((n) => ({ lines: lines(n), rect: rect(n) }))
            .filter((b) => b.lines.length > 0); // the [*] start and end points
          const labels = [...el.querySelectorAll('g.edgeLabel')].map((l) => ({ lines: lines(l), rect: rect(l.querySelector('foreignObject') ?? l) }))
            .filter((l) => l.lines.length > 0);

          // Overlaps of more than 2px either way: a label lying over a box or
          // over another label.
          const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2 &&
            Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2;
          const overlaps = [];
          for (const [j, l] of labels.entries()) {
            for (const b of boxes) if (hit(l.rect, b.rect)) overlaps.push({ kind: 'label over box', a: l.lines.join(' / '), b: b.lines[0] });
            for (const m of labels.slice(j + 1)) if (hit(l.rect, m.rect)) overlaps.push({ kind: 'label over label', a: l.lines.join(' / '), b: m.lines.join(' / ') });
          }
          out.innerHTML = '';
          return {
            width: vb.width, height: vb.height,
            boxes: boxes.map((b) => b.lines), labels: labels.map((l) => l.lines.join(' / ')), overlaps,
          };
        } catch (e) {
          return { error: String(e && e.message ? e.message : e).slice(0, 500) };
        }
      }, `diagram${i}`, d.source);
      results.push({ version: bundle.version, name: d.name, ...r });
    }
    await page.close();
  }
  process.stdout.write(JSON.stringify({ browser: await browser.version(), results }) + '\n');
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
