// A push subscriber built on the `ws` npm package (t/integration/push_websocket_test.cpp):
// subscribes to ACCOUNT on ws://127.0.0.1:PORT/PATH, takes FIRST notifications, closes,
// connects again with the last notification's cursor (an event's, or a retraction's after a
// fork) and takes SECOND more, as a client resuming after a lost connection (or a reload: 1001) does (docs/wallet-history-api.md, "Push over WebSocket").
// Writes {"answers": [subscribe answers], "events": [{subscription, event, cursor}...]} to OUT.
'use strict';
const fs = require('fs');
const WebSocket = require('ws');

const [port, path, account, first, second, out] = process.argv.slice(2);
const url = `ws://127.0.0.1:${port}${path}`;

// One connection: subscribes (after `cursor` when given) and collects `count` notifications.
function session(cursor, count) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const got = { answer: null, events: [], cursor: null };
    const timer = setTimeout(() => reject(new Error(`${got.events.length} of ${count} notifications in 60 s`)), 60000);
    socket.on('error', reject);
    socket.on('open', () => {
      const params = { accounts: [account] };
      if (cursor) params.cursor = cursor;
      socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'wallet_history.subscribe', params }));
    });
    socket.on('message', (data) => {
      const m = JSON.parse(data.toString());
      if (m.id === 1) {
        got.answer = m;
        if (m.error) reject(new Error(JSON.stringify(m.error)));
      } else if (m.method === 'wallet_history.retract') {
        // A fork removed the newest event: its cursor is the one to resume from.
        got.events.pop();
        got.cursor = m.params.cursor;
      } else if (m.method === 'wallet_history.event') {
        if (got.events.length < count) {
          got.events.push(m.params);
          got.cursor = m.params.cursor;
        }
        if (got.events.length === count) {
          clearTimeout(timer);
          socket.close(1000);
          resolve(got);
        }
      }
    });
  });
}

(async () => {
  const a = await session(null, Number(first));
  const b = await session(a.cursor, Number(second));
  fs.writeFileSync(out, JSON.stringify({ answers: [a.answer, b.answer], events: a.events.concat(b.events) }));
})().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
