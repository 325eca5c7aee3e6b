#!/usr/bin/env node
// End-to-end test of `leaklint lsp` with a real JSON-RPC client (vscode-jsonrpc, the
// library under VS Code's language client).
// usage: node lsp_e2e.js path/to/leaklint
//
// Spawns the server, initializes, opens a leaky document, waits for the LL101 diagnostic,
// requests code actions, applies the quick fix to the text, sends didChange and sees the
// diagnostics clear; checks the suppression action, an unknown request, didClose; then
// shutdown/exit and the server's exit code.
'use strict';

const assert = require('assert');
const childProcess = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { pathToFileURL } = require('url');
const rpc = require('vscode-jsonrpc/node');

const binary = process.argv[2] && path.resolve(process.argv[2]);
if (!binary) {
  console.error('usage: node lsp_e2e.js path/to/leaklint');
  process.exit(2);
}

const deadline = setTimeout(() => {
  console.error('FAIL: timed out');
  process.exit(1);
}, 60000);

// The emoji before `model(x)` makes UTF-16 columns (what LSP counts) differ from bytes.
const LEAKY = [
  'import torch',
  '',
  '',
  'def evaluate(model, val_loader):',
  '    model.eval()',
  '    correct = 0',
  '    for x, y in val_loader:',
  '        correct += len("\u{1F680}") * (model(x).argmax(1) == y).sum().item()',
  '    return correct',
  '',
].join('\n');

// Offset in a JS (UTF-16) string of an LSP position; lines end at \n, \r\n or \r.
function offsetAt(text, pos) {
  let line = 0;
  let i = 0;
  while (line < pos.line && i < text.length) {
    const c = text[i++];
    if (c === '\r' && text[i] === '\n') i++;
    if (c === '\n' || c === '\r') line++;
  }
  let end = i;
  while (end < text.length && text[end] !== '\n' && text[end] !== '\r') end++;
  return Math.min(i + pos.character, end);
}

// Applies TextEdits (all computed on `text`) from the last to the first.
function applyEdits(text, edits) {
  const spans = edits.map((e) => [offsetAt(text, e.range.start), offsetAt(text, e.range.end), e.newText]);
  spans.sort((a, b) => b[0] - a[0]);
  for (const [b, e, t] of spans) text = text.slice(0, b) + t + text.slice(e);
  return text;
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leaklint-lsp-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  // A configuration of its own, so no pyproject.toml above the temp dir applies.
  fs.writeFileSync(path.join(dir, '.leaklint.toml'), 'select = ["LL"]\n');
  const file = path.join(dir, 'evaluate.py');
  fs.writeFileSync(file, LEAKY);
  const uri = pathToFileURL(file).href;

  const server = childProcess.spawn(binary, ['lsp'], { cwd: dir, stdio: ['pipe', 'pipe', 'inherit'] });
  let expectExit = false;
  const exited = new Promise((resolve) =>
    server.on('exit', (code, signal) => {
      if (!expectExit) {
        // E.g. a binary without the `lsp` subcommand: fail now, not at the deadline.
        console.error(`FAIL: the server exited early (code ${code}, signal ${signal})`);
        process.exit(1);
      }
      resolve({ code, signal });
    }),
  );
  server.on('error', (err) => {
    console.error(`FAIL: cannot run ${binary}: ${err.message}`);
    process.exit(1);
  });
  const conn = rpc.createMessageConnection(
    new rpc.StreamMessageReader(server.stdout),
    new rpc.StreamMessageWriter(server.stdin),
  );

  // publishDiagnostics notifications, and waiters for one that matches a predicate.
  const published = [];
  const waiters = [];
  conn.onNotification('textDocument/publishDiagnostics', (params) => {
    published.push(params);
    for (let k = waiters.length - 1; k >= 0; k--) {
      if (waiters[k].pred(params)) {
        waiters[k].resolve(params);
        waiters.splice(k, 1);
      }
    }
  });
  const diagnostics = (pred) =>
    new Promise((resolve) => {
      const seen = published.find(pred);
      if (seen) resolve(seen);
      else waiters.push({ pred, resolve });
    });
  conn.listen();

  const init = await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: pathToFileURL(dir).href,
    capabilities: { textDocument: { publishDiagnostics: { relatedInformation: true } } },
    workspaceFolders: [{ uri: pathToFileURL(dir).href, name: 'ws' }],
  });
  const caps = init.capabilities;
  assert.strictEqual(caps.textDocumentSync.change, 1, 'full document sync');
  assert.strictEqual(caps.textDocumentSync.openClose, true);
  assert.ok(caps.textDocumentSync.save, 'save notifications wanted');
  assert.deepStrictEqual(caps.codeActionProvider.codeActionKinds, ['quickfix']);
  assert.strictEqual(init.serverInfo.name, 'leaklint');
  await conn.sendNotification('initialized', {});

  // 1. Open: LL101 with 0-based UTF-16 range, code, href, source, severity.
  await conn.sendNotification('textDocument/didOpen', {
    textDocument: { uri, languageId: 'python', version: 1, text: LEAKY },
  });
  const first = await diagnostics((p) => p.uri === uri && p.version === 1);
  const ll101 = first.diagnostics.filter((d) => d.code === 'LL101');
  assert.strictEqual(ll101.length, 1, `one LL101, got ${JSON.stringify(first.diagnostics)}`);
  const diag = ll101[0];
  const line7 = LEAKY.split('\n')[7];
  assert.deepStrictEqual(diag.range.start, { line: 7, character: line7.indexOf('model(x)') });
  assert.deepStrictEqual(diag.range.end, { line: 7, character: line7.indexOf('model(x)') + 'model(x)'.length });
  assert.strictEqual(diag.source, 'leaklint');
  assert.strictEqual(diag.severity, 2);
  assert.match(diag.codeDescription.href, /LL101-missing-no-grad\.md$/);
  assert.match(diag.message, /no_grad/);

  // 2. Code actions at the diagnostic: the fix and the suppression.
  const actions = await conn.sendRequest('textDocument/codeAction', {
    textDocument: { uri },
    range: diag.range,
    context: { diagnostics: [diag], only: ['quickfix'] },
  });
  assert.ok(Array.isArray(actions) && actions.length >= 2, JSON.stringify(actions));
  for (const a of actions) assert.strictEqual(a.kind, 'quickfix');
  const fix = actions.find((a) => !a.title.startsWith('Suppress'));
  const suppress = actions.find((a) => a.title === 'Suppress LL101 on this line');
  assert.ok(fix, 'a quick fix');
  assert.ok(suppress, 'a suppression action');
  assert.strictEqual(fix.diagnostics[0].code, 'LL101');

  // 3. Apply the fix as an editor would; the diagnostics clear.
  const fixed = applyEdits(LEAKY, fix.edit.changes[uri]);
  assert.ok(fixed.includes('@torch.no_grad()\ndef evaluate('), fixed);
  await conn.sendNotification('textDocument/didChange', {
    textDocument: { uri, version: 2 },
    contentChanges: [{ text: fixed }],
  });
  const second = await diagnostics((p) => p.uri === uri && p.version === 2);
  assert.deepStrictEqual(second.diagnostics, [], JSON.stringify(second.diagnostics));
  const none = await conn.sendRequest('textDocument/codeAction', {
    textDocument: { uri },
    range: diag.range,
    context: { diagnostics: [] },
  });
  assert.deepStrictEqual(none, []);

  // 4. Back to the leaky text, then the suppression: clears too.
  await conn.sendNotification('textDocument/didChange', {
    textDocument: { uri, version: 3 },
    contentChanges: [{ text: LEAKY }],
  });
  const third = await diagnostics((p) => p.uri === uri && p.version === 3);
  assert.strictEqual(third.diagnostics.filter((d) => d.code === 'LL101').length, 1);
  const suppressed = applyEdits(LEAKY, suppress.edit.changes[uri]);
  assert.ok(suppressed.includes('.sum().item()  # noqa: LL101\n'), suppressed);
  await conn.sendNotification('textDocument/didChange', {
    textDocument: { uri, version: 4 },
    contentChanges: [{ text: suppressed }],
  });
  await conn.sendNotification('textDocument/didSave', { textDocument: { uri } });
  const fourth = await diagnostics((p) => p.uri === uri && p.version === 4);
  assert.deepStrictEqual(fourth.diagnostics, []);

  // 5. An unknown request is answered with MethodNotFound; the server stays up.
  await assert.rejects(conn.sendRequest('leaklint/noSuchMethod', {}), (e) => e.code === -32601);

  // 6. Close: diagnostics cleared.
  const before = published.length;
  await conn.sendNotification('textDocument/didClose', { textDocument: { uri } });
  const closed = await diagnostics((p) => p.uri === uri && published.indexOf(p) >= before);
  assert.deepStrictEqual(closed.diagnostics, []);

  // 7. shutdown, exit: exit code 0.
  assert.strictEqual(await conn.sendRequest('shutdown'), null);
  expectExit = true;
  await conn.sendNotification('exit');
  const { code, signal } = await exited;
  conn.dispose();
  assert.strictEqual(signal, null);
  assert.strictEqual(code, 0);
}

main().then(
  () => {
    clearTimeout(deadline);
    console.log('lsp_e2e: OK');
  },
  (err) => {
    console.error('FAIL:', err && err.stack ? err.stack : err);
    process.exit(1);
  },
);
