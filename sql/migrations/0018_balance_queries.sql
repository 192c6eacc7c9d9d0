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

-- get_balances reads an account's pending events (the ones it replays in
-- block order) by account.
CREATE INDEX wallet_balance_pending_account ON wallet_balance_pending (account_id, block_num);

-- What a balance at `at_block` depends on, for the API's role (which may
-- not read backfill_shards): the lowest block of the configured range (the
-- shards' and the indexer's), the first block still loading, the lowest
-- outdated run and wallet_balance_coverage's missing_through.
CREATE FUNCTION wallet_balance_readiness(current_version smallint,
    OUT first_block integer, OUT loading_from integer, OUT outdated_from integer, OUT outdated_to integer,
    OUT missing_through integer)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    first_block := least((SELECT min(s.start_block) FROM backfill_shards s), (SELECT min(r.first_block) FROM indexer_ranges r));
    loading_from := (SELECT min(m.first_block) FROM wallet_loading_shards() m);
    SELECT o.first_block, o.last_block INTO outdated_from, outdated_to FROM wallet_outdated_range(current_version) o;
    missing_through := (SELECT c.missing_through FROM wallet_balance_coverage c);
END $$;

GRANT SELECT ON wallet_balance_undecodable TO wallet_api_reader;
GRANT EXECUTE ON FUNCTION wallet_balance_readiness(smallint) TO wallet_api_reader;

-- get_balances' rows (ngx_module/api/core/api_balances.cpp reads them): $1
-- the account, $2 the block (NULL: the indexed block), $3 the decoder
-- version. A header row (kind 0: indexed block, the block, the account id,
-- the readiness above and the account's first undecodable event at or below
-- the block), the account's day sums of every day up to the block's except
-- the replayed days (kind 1: day, component, units), and the events of the
-- replayed days (kind 2: block, block_seq, epoch, account, role, op type,
-- payload): the day of the last stored block at or below the block (up to
-- the block), and the days of the account's pending events. A replayed day's
-- events are the account's own and those of its pending rows that are another
-- account's (a change of the account carried by that account's event); the
-- account's own pending events are on replayed days already. Days are
-- wallet_balance_daily's. A function so that it runs with jit off: its
-- estimates (the laterals' row counts) make PostgreSQL compile it for
-- seconds to run it in milliseconds.
CREATE FUNCTION wallet_balance_rows(account text, at_block integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE SET jit = off AS $$
WITH st AS (SELECT s.indexed_block, coalesce($2, s.indexed_block) AS at_block,  (SELECT id FROM wallet_accounts WHERE name = $1) AS account_id FROM wallet_store_state s),
   ready AS (SELECT * FROM wallet_balance_readiness($3)),
   tip AS (SELECT w.ts FROM wallet_blocks w, st WHERE w.block_num <= st.at_block ORDER BY w.block_num DESC LIMIT 1),
   pending AS (SELECT p.block_num, p.block_seq, p.role FROM wallet_balance_pending p, st  WHERE p.account_id = st.account_id AND p.block_num <= st.at_block),
   replayed AS (SELECT DISTINCT floor((extract(epoch FROM d.ts) - 1451606400) / 86400)::integer AS day  FROM (SELECT ts FROM tip UNION ALL SELECT w.ts FROM pending p JOIN wallet_blocks w ON w.block_num = p.block_num) d),
   ranges AS (SELECT wallet_first_block_at(to_timestamp(1451606400 + r.day * 86400::bigint)) AS first_block,  least(wallet_first_block_at(to_timestamp(1451606400 + (r.day + 1) * 86400::bigint)) - 1, st.at_block) AS last_block  FROM replayed r, st),
   undecodable AS (SELECT u.block_num, u.op_type FROM wallet_balance_undecodable u, st  WHERE u.account_id = st.account_id AND u.block_num <= st.at_block ORDER BY u.block_num LIMIT 1)
   SELECT 0 AS kind, st.indexed_block::bigint, st.at_block::bigint, st.account_id::bigint, r.first_block::bigint,  r.loading_from::bigint, r.missing_through::bigint, r.outdated_from::text, r.outdated_to::text,  (SELECT block_num::text FROM undecodable), (SELECT wallet_op_type_name(op_type) FROM undecodable)  FROM st, ready r
   UNION ALL SELECT 1, d.day::bigint, d.component::bigint, d.units, NULL, NULL, NULL, NULL, NULL, NULL, NULL  FROM wallet_balance_daily d, st WHERE d.account_id = st.account_id   AND d.day <= (SELECT max(day) FROM replayed) AND d.day NOT IN (SELECT day FROM replayed)
   UNION ALL SELECT 2, e.block_num::bigint, e.block_seq::bigint, extract(epoch FROM e.ts)::bigint,  NULL::bigint, NULL::bigint, NULL::bigint, a.name::text, wallet_role_name(e.role)::text,  wallet_op_type_name(e.op_type)::text, wallet_operation_payload(b.ops -> e.block_seq::text, e.block_num, e.ts,   e.op_in_trx, e.virtual_op, e.trx_id, e.op_type)::text
   FROM (SELECT o.* FROM ranges g CROSS JOIN LATERAL (SELECT * FROM wallet_events o    WHERE o.account_id = (SELECT account_id FROM st) AND o.wide IN (false, true)     AND o.block_num BETWEEN g.first_block AND g.last_block) o
   UNION ALL SELECT o.* FROM pending p CROSS JOIN LATERAL (SELECT * FROM wallet_events o    WHERE o.block_num = p.block_num AND o.block_seq = p.block_seq AND o.role = p.role     AND o.account_id <> (SELECT account_id FROM st)) o) e
   JOIN wallet_accounts a ON a.id = e.account_id JOIN wallet_blocks b ON b.block_num = e.block_num
$$;
GRANT EXECUTE ON FUNCTION wallet_balance_rows(text, integer, smallint) TO wallet_api_reader;
