// Drives the JSON-RPC router the way wallets and apps do, with libraries this
// project did not write: @hiveio/dhive over HTTP and `ws` over WebSocket.
// Usage: node hive_clients.js ROUTER_PORT ANSWERS_FILE
// Writes one JSON object: for each transport, each call's result (or
// {"client_error": message} when the library rejected the answer). The test
// (t/integration/router_clients_test.cpp) compares them with the fixtures.
'use strict';

const fs = require('fs');
const { Client } = require('@hiveio/dhive');
const WebSocket = require('ws');

const [port, answersFile] = process.argv.slice(2);
const httpUrl = `http://127.0.0.1:${port}/`;
const wsUrl = `ws://127.0.0.1:${port}/`;

// camilla's payout block 4785210 (2016-09-08T07:52:42), indexed by the test.
const walletParams = { account: 'camilla', from: '2016-09-08T07:52:42Z', to: '2016-09-08T07:52:43Z' };

async function settle(promise) {
  try {
    return await promise;
  } catch (error) {
    return { client_error: String(error && error.message ? error.message : error) };
  }
}

// dhive speaks condenser_api through Client.database (ids are 0, and it
// checks that the answer carries the same id).
async function viaDhive() {
  const client = new Client(httpUrl, { timeout: 15000, failoverThreshold: 1 });
  const out = {};
  out.dynamic_global_properties = await settle(client.database.getDynamicGlobalProperties());
  out.block_header = await settle(client.database.getBlockHeader(1000000));
  out.ops_in_block = await settle(client.database.getOperations(4168774, false));
  // Transfers only: operation bit 2 (transfer_operation), as [low, high].
  out.account_history = await settle(client.database.getAccountHistory('blocktrades', 206155, 16, [4, 0]));
  out.wallet_history = await settle(client.call('wallet_history', 'get_wallet_history', walletParams));
  // A batch is not part of dhive's API: the same HTTP endpoint through fetch.
  out.batch = await settle(
    fetch(httpUrl, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'database_api.get_dynamic_global_properties', params: {} },
        { jsonrpc: '2.0', id: 2, method: 'wallet_history.get_wallet_history', params: walletParams },
        { jsonrpc: '2.0', id: 3, method: 'block_api.get_block_header', params: { block_num: 1000000 } },
      ]),
    }).then((response) => response.json()),
  );
  return out;
}

// One WebSocket connection; requests are matched to answers by id (a batch
// by the id of its first element).
async function viaWs() {
  const socket = new WebSocket(wsUrl);
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  const pending = new Map();
  socket.on('message', (data) => {
    const answer = JSON.parse(data.toString());
    const id = Array.isArray(answer) ? answer[0] && answer[0].id : answer.id;
    const waiter = pending.get(id);
    if (waiter) {
      pending.delete(id);
      waiter(answer);
    }
  });
  const send = (request, id) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${JSON.stringify(request)}`)), 15000);
      pending.set(id, (answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
      socket.send(JSON.stringify(request));
    });
  const call = (id, method, params) =>
    send({ jsonrpc: '2.0', id, method, params }, id).then((answer) => {
      if (answer.error) throw new Error(`${answer.error.code} ${answer.error.message}`);
      return answer.result;
    });

  const out = {};
  // All in flight at once on the one connection, as a wallet front end does.
  const [dgp, header, ops, history, wallet] = await Promise.all([
    settle(call('dgp', 'database_api.get_dynamic_global_properties', {})),
    settle(call(11, 'block_api.get_block_header', { block_num: 1000000 })),
    settle(call(12, 'account_history_api.get_ops_in_block', { block_num: 4168774, only_virtual: false })),
    settle(call(13, 'account_history_api.get_account_history',
                { account: 'blocktrades', operation_filter_low: 4, start: 206155, limit: 16 })),
    settle(call(14, 'wallet_history.get_wallet_history', walletParams)),
  ]);
  Object.assign(out, {
    dynamic_global_properties: dgp,
    block_header: header,
    ops_in_block: ops,
    account_history: history,
    wallet_history: wallet,
  });
  out.batch = await settle(
    send([
      { jsonrpc: '2.0', id: 21, method: 'condenser_api.get_dynamic_global_properties', params: [] },
      { jsonrpc: '2.0', id: 22, method: 'wallet_history.get_wallet_history', params: walletParams },
      { jsonrpc: '2.0', id: 23, method: 'condenser_api.get_block_header', params: [1000000] },
    ], 21),
  );
  socket.close();
  return out;
}

async function main() {
  const result = { http: await viaDhive(), ws: await viaWs() };
  fs.writeFileSync(answersFile, JSON.stringify(result));
}

main().catch((error) => {
  process.stderr.write(`hive_clients.js: ${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
