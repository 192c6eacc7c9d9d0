-- 0018: what get_balances needs beside the sums of 0017 (issue 28;
-- docs/store-layout.md, "Balances from the history"). Additive.

-- Events stored whose balance changes the decoder could not read: stored
-- like every event (a load never stops on one odd operation), their changes
-- left out of the sums, and listed here so that a balance they may move is
-- refused with the block named instead of answered wrong. The account is
-- the event's; decoder_version the decoder that could not read it.
CREATE TABLE wallet_balance_undecodable (
    account_id      integer  NOT NULL,
    block_num       integer  NOT NULL,
    block_seq       integer  NOT NULL,
    role            smallint NOT NULL,
    op_type         smallint NOT NULL,
    decoder_version smallint NOT NULL,
    problem         text     NOT NULL,
    PRIMARY KEY (block_num, block_seq, account_id, role)
);
CREATE INDEX wallet_balance_undecodable_account ON wallet_balance_undecodable (account_id, block_num);

-- What a balance at `at_block` depends on, for the API's role (which may
-- not read backfill_shards): the lowest block of the configured range (the
-- shards' and the indexer's), the first block still loading, the lowest
-- outdated run and the snapshot pass's checkpoint.
CREATE FUNCTION wallet_balance_readiness(current_version smallint,
    OUT first_block integer, OUT loading_from integer, OUT outdated_from integer, OUT outdated_to integer,
    OUT snapshots_through integer)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    first_block := least((SELECT min(s.start_block) FROM backfill_shards s), (SELECT min(r.first_block) FROM indexer_ranges r));
    loading_from := (SELECT min(m.first_block) FROM wallet_loading_shards() m);
    SELECT o.first_block, o.last_block INTO outdated_from, outdated_to FROM wallet_outdated_range(current_version) o;
    snapshots_through := (SELECT c.through_block FROM wallet_balance_snapshot_state c);
END $$;

GRANT SELECT ON wallet_balance_undecodable TO wallet_api_reader;
GRANT EXECUTE ON FUNCTION wallet_balance_readiness(smallint) TO wallet_api_reader;

-- get_balances' rows (ngx_module/api/core/api_balances.cpp reads them): $1
-- the account, $2 the block (NULL: the indexed block), $3 the decoder
-- version. A header row (kind 0: indexed block, the block, the account id,
-- the readiness above and the account's first undecodable event at or below
-- the block), the account's last snapshot at or below the block (kind 1:
-- its block, its state), and the events after the snapshot up to the block
-- that change the account (kind 2: block, block_seq, account, role, op type,
-- payload): its own (the keyset index's range) and those it is carried by
-- (wallet_balance_carried). Below the snapshot pass that is at most one
-- period of one account's events. The account and the bounds are scalar
-- subqueries, so that each read is an index range (the CTEs' row estimates
-- make joins on them hash whole tables). jit off: its estimates make
-- PostgreSQL compile it for longer than it runs.
CREATE FUNCTION wallet_balance_rows(account text, at_block integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE SET jit = off AS $$
WITH st AS (SELECT s.indexed_block, coalesce($2, s.indexed_block) AS at_block, (SELECT id FROM wallet_accounts WHERE name = $1) AS account_id FROM wallet_store_state s),
   ready AS (SELECT * FROM wallet_balance_readiness($3)),
   snap AS (SELECT s.block_num, s.state FROM wallet_balance_snapshots s
             WHERE s.account_id = (SELECT account_id FROM st) AND s.block_num <= (SELECT at_block FROM st)
             ORDER BY s.block_num DESC LIMIT 1),
   since AS (SELECT coalesce((SELECT block_num FROM snap), -1) AS block_num),
   undecodable AS (SELECT u.block_num, u.op_type FROM wallet_balance_undecodable u, st
                    WHERE u.account_id = st.account_id AND u.block_num <= st.at_block ORDER BY u.block_num LIMIT 1)
   SELECT 0 AS kind, st.indexed_block::bigint, st.at_block::bigint, st.account_id::bigint, r.first_block::bigint,
          r.loading_from::bigint, r.snapshots_through::bigint, r.outdated_from::text, r.outdated_to::text,
          (SELECT block_num::text FROM undecodable), (SELECT wallet_op_type_name(op_type) FROM undecodable)
     FROM st, ready r
   UNION ALL SELECT 1, snap.block_num::bigint, NULL, NULL, NULL, NULL, NULL, encode(snap.state, 'hex'), NULL, NULL, NULL FROM snap
   UNION ALL SELECT 2, e.block_num::bigint, e.block_seq::bigint, NULL, NULL, NULL, NULL,
          (SELECT a.name FROM wallet_accounts a WHERE a.id = e.account_id)::text, wallet_role_name(e.role)::text,
          wallet_op_type_name(e.op_type)::text,
          wallet_operation_payload((SELECT b.ops -> e.block_seq::text FROM wallet_blocks b WHERE b.block_num = e.block_num),
                                   e.block_num, e.ts, e.op_in_trx, e.virtual_op, e.trx_id, e.op_type)::text
     FROM (SELECT o.* FROM wallet_events o
            WHERE o.account_id = (SELECT account_id FROM st) AND o.wide IN (false, true)
              AND o.block_num > (SELECT block_num FROM since) AND o.block_num <= (SELECT at_block FROM st)
           UNION ALL
           SELECT o.* FROM wallet_balance_carried c CROSS JOIN LATERAL (SELECT * FROM wallet_events o
                     WHERE o.account_id = c.event_account_id AND o.wide IN (false, true) AND o.block_num = c.block_num
                       AND o.block_seq * 100 + o.role = c.block_seq * 100 + c.role) o
            WHERE c.account_id = (SELECT account_id FROM st) AND c.block_num > (SELECT block_num FROM since)
              AND c.block_num <= (SELECT at_block FROM st)) e
$$;
GRANT EXECUTE ON FUNCTION wallet_balance_rows(text, integer, smallint) TO wallet_api_reader;
