// Records crates/speedy-archive/tests/data/chromium.har: headless Chromium loads the two
// pages of ./site from `speedy serve --root site` over the DevTools protocol, and
// chrome-har turns the protocol messages into a HAR 1.2 with response bodies.
//
//   npm ci && node capture-har.mjs --speedy ../../../../target/debug/speedy --out ../data/chromium.har
//
// Each page loads in a fresh tab with the cache disabled (chrome-har makes one HAR page
// per top-level frame), and the tab stays open 1 s after onload so the page's timers
// (150 ms and 300 ms in js/app.js) fire. Not run by the tests: its output is committed.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import CDP from 'chrome-remote-interface';
import { harFromMessages } from 'chrome-har';

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const speedy = arg('--speedy', join(here, '../../../../target/debug/speedy'));
const out = arg('--out', join(here, '../data/chromium.har'));
const chromium = arg('--chromium', 'chromium');
const pages = ['index.html', 'page2.html'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Waits for a line matching `re` on a child's stream; resolves with the match.
function lineMatching(stream, re) {
  return new Promise((resolve, reject) => {
    let buf = '';
    stream.on('data', (d) => {
      buf += d.toString();
      const m = buf.match(re);
      if (m) resolve(m);
    });
    stream.on('end', () => reject(new Error(`no line matching ${re}: ${buf}`)));
  });
}

const server = spawn(speedy, ['serve', '--listen', '127.0.0.1:0', '--root', join(here, 'site')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const [, addr] = await lineMatching(server.stdout, /listening on (\S+)/);
const profile = mkdtempSync(join(tmpdir(), 'speedy-har-capture-'));
const browser = spawn(chromium, [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-extensions', `--user-data-dir=${profile}`, '--remote-debugging-port=0',
  'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe'] });
const [, port] = await lineMatching(browser.stderr, /DevTools listening on ws:\/\/[^:]+:(\d+)\//);

const messages = [];
try {
  for (const page of pages) {
    const target = await CDP.New({ port: Number(port), url: 'about:blank' });
    const client = await CDP({ port: Number(port), target });
    const bodies = [];
    const byId = new Map();
    client.on('event', (m) => {
      if (!m.method.startsWith('Network.') && !m.method.startsWith('Page.')) return;
      messages.push({ method: m.method, params: m.params });
      if (m.method === 'Network.responseReceived') byId.set(m.params.requestId, m.params.response);
      if (m.method === 'Network.loadingFinished') {
        const resp = byId.get(m.params.requestId);
        // Fetch the body now, before a later navigation can evict it.
        bodies.push(client.Network.getResponseBody({ requestId: m.params.requestId }).then(
          (b) => { if (resp) { resp.body = b.body; if (b.base64Encoded) resp.encoding = 'base64'; } },
          () => {},
        ));
      }
    });
    await client.Page.enable();
    await client.Network.enable();
    await client.Network.setCacheDisabled({ cacheDisabled: true });
    const loaded = client.Page.loadEventFired();
    await client.Page.navigate({ url: `http://${addr}/${page}` });
    await loaded;
    await sleep(1000);
    await Promise.all(bodies);
    await client.close();
    await CDP.Close({ port: Number(port), id: target.id });
  }
} finally {
  browser.kill();
  server.kill();
}
const har = harFromMessages(messages, { includeTextFromResponseBody: true });
writeFileSync(out, JSON.stringify(har, null, 1) + '\n');
rmSync(profile, { recursive: true, force: true });
console.log(`${out}: ${har.log.pages.length} pages, ${har.log.entries.length} entries`);
