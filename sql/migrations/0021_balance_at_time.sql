-- 0021: get_balances at a time, and one place for the balance statements'
-- event rows (issue 28; docs/wallet-history-api.md, get_balances).

-- The events that change an account's balances in blocks (after_block,
-- through_block]: its own (both ranges of the keyset index) and those of
-- other accounts that carry a change of it (wallet_balance_carried), each
-- with what the worker replays (the event's account, role and op type
-- names, its operation as wallet_operation_payload rebuilds it) and its
-- keyset key (block_seq * 100 + role) and time. Every balance statement's
-- kind-2 rows are these (0018's and 0020's built them each alike).
CREATE FUNCTION wallet_balance_events(of_account integer, after_block integer, through_block integer)
RETURNS TABLE (block_num integer, block_seq integer, key integer, epoch bigint,
               account text, role text, op_type text, payload text)
LANGUAGE sql STABLE AS $$
SELECT e.block_num, e.block_seq, e.block_seq * 100 + e.role, extract(epoch FROM e.ts)::bigint,
       (SELECT a.name FROM wallet_accounts a WHERE a.id = e.account_id)::text, wallet_role_name(e.role)::text,
       wallet_op_type_name(e.op_type)::text,
       wallet_operation_payload((SELECT b.ops -> e.block_seq::text FROM wallet_blocks b WHERE b.block_num = e.block_num),
                                e.block_num, e.ts, e.op_in_trx, e.virtual_op, e.trx_id, e.op_type)::text
  FROM (SELECT o.* FROM wallet_events o
         WHERE o.account_id = $1 AND o.wide IN (false, true) AND o.block_num > $2 AND o.block_num <= $3
        UNION ALL
        SELECT o.* FROM wallet_balance_carried c CROSS JOIN LATERAL (SELECT * FROM wallet_events o
                  WHERE o.account_id = c.event_account_id AND o.wide IN (false, true) AND o.block_num = c.block_num
                    AND o.block_seq * 100 + o.role = c.block_seq * 100 + c.role) o
         WHERE c.account_id = $1 AND c.block_num > $2 AND c.block_num <= $3) e
$$;
GRANT EXECUTE ON FUNCTION wallet_balance_events(integer, integer, integer) TO wallet_api_reader;

-- 0018's get_balances rows, its events from the function above (the same rows).
CREATE OR REPLACE FUNCTION wallet_balance_rows(account text, at_block integer, current_version smallint)
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
   UNION ALL SELECT 2, e.block_num::bigint, e.block_seq::bigint, NULL, NULL, NULL, NULL, e.account, e.role, e.op_type, e.payload
     FROM wallet_balance_events((SELECT account_id FROM st), (SELECT block_num FROM since), (SELECT at_block FROM st)) e
$$;

-- 0020's history page, its events from the function above: those from the
-- snapshot up to the page's position (its block, and in it the keys below
-- the position's); none when the window has no event (low is NULL).
CREATE OR REPLACE FUNCTION wallet_balance_history_rows(account text, before_block integer, before_key integer,
    from_time timestamptz, to_time timestamptz, scan integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE SET jit = off AS $$
WITH bounds AS (SELECT s.indexed_block, (SELECT id FROM wallet_accounts WHERE name = $1) AS account_id,
                       least(s.indexed_block + 1, CASE WHEN $5 IS NULL THEN 2147483647 ELSE wallet_first_block_at($5) END) AS end_block,
                       CASE WHEN $4 IS NULL THEN 0 ELSE wallet_first_block_at($4) END AS lower_block
                  FROM wallet_store_state s),
   st AS (SELECT b.*, CASE WHEN $2 < b.end_block THEN $2 ELSE b.end_block END AS ub,
                      CASE WHEN $2 < b.end_block THEN $3 ELSE 0 END AS uk FROM bounds b),
   pos AS (SELECT st.*, CASE WHEN st.uk > 0 THEN st.ub ELSE st.ub - 1 END AS at_block FROM st),
   ready AS (SELECT * FROM wallet_balance_readiness($7)),
   undecodable AS (SELECT u.block_num, u.op_type FROM wallet_balance_undecodable u, pos
                    WHERE u.account_id = pos.account_id AND u.block_num <= pos.at_block ORDER BY u.block_num LIMIT 1),
   win AS (SELECT y.block_num FROM (
             SELECT x.block_num, x.k FROM (VALUES (false), (true)) AS w(wide) CROSS JOIN LATERAL (
                 SELECT o.block_num, o.block_seq * 100 + o.role AS k FROM wallet_events o
                  WHERE o.account_id = (SELECT account_id FROM pos) AND o.wide = w.wide
                    AND (o.block_num, o.block_seq * 100 + o.role) < ((SELECT ub FROM pos), (SELECT uk FROM pos))
                    AND o.block_num >= (SELECT lower_block FROM pos)
                  ORDER BY o.block_num DESC, o.block_seq * 100 + o.role DESC LIMIT $6 + 1) x
             UNION ALL
             (SELECT c.block_num, c.block_seq * 100 + c.role FROM wallet_balance_carried c
               WHERE c.account_id = (SELECT account_id FROM pos)
                 AND (c.block_num, c.block_seq * 100 + c.role) < ((SELECT ub FROM pos), (SELECT uk FROM pos))
                 AND c.block_num >= (SELECT lower_block FROM pos)
               ORDER BY c.block_num DESC, c.block_seq DESC, c.role DESC LIMIT $6 + 1)) y
           ORDER BY y.block_num DESC, y.k DESC LIMIT $6 + 1),
   low AS (SELECT min(win.block_num) AS block_num FROM win),
   snap AS (SELECT s.block_num, s.state FROM wallet_balance_snapshots s
             WHERE s.account_id = (SELECT account_id FROM pos) AND s.block_num < (SELECT block_num FROM low)
             ORDER BY s.block_num DESC LIMIT 1),
   since AS (SELECT coalesce((SELECT block_num FROM snap), -1) AS block_num),
   through AS (SELECT CASE WHEN (SELECT block_num FROM low) IS NULL THEN -1 ELSE pos.at_block END AS block_num FROM pos)
   SELECT 0 AS kind, pos.indexed_block::bigint, pos.at_block::bigint, pos.account_id::bigint, r.first_block::bigint,
          r.loading_from::bigint, r.snapshots_through::bigint, r.outdated_from::text, r.outdated_to::text,
          (SELECT block_num::text FROM undecodable), (SELECT wallet_op_type_name(op_type) FROM undecodable)
     FROM pos, ready r
   UNION ALL SELECT 1, snap.block_num::bigint, NULL, NULL, NULL, NULL, NULL, encode(snap.state, 'hex'), NULL, NULL, NULL FROM snap
   UNION ALL SELECT 3, pos.lower_block::bigint, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM pos
   UNION ALL SELECT 2, e.block_num::bigint, e.block_seq::bigint, e.epoch, NULL, NULL, NULL, e.account, e.role, e.op_type, e.payload
     FROM wallet_balance_events((SELECT account_id FROM pos), (SELECT block_num FROM since), (SELECT block_num FROM through)) e
    WHERE (e.block_num, e.key) < ((SELECT ub FROM pos), (SELECT uk FROM pos))
$$;

-- 0020's period rows, their events from the function above.
CREATE OR REPLACE FUNCTION wallet_balance_period_rows(account text, granularity text, from_time timestamptz, to_time timestamptz,
    max_periods integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE SET jit = off AS $$
WITH st AS (SELECT s.indexed_block, (SELECT id FROM wallet_accounts WHERE name = $1) AS account_id,
                   (SELECT b.ts FROM wallet_blocks b WHERE b.block_num = s.indexed_block) AS indexed_time,
                   ('1 ' || $2)::interval AS step
              FROM wallet_store_state s),
   first_event AS (SELECT min(x.ts) AS ts FROM (VALUES (false), (true)) AS w(wide) CROSS JOIN LATERAL (
                    SELECT o.ts FROM wallet_events o WHERE o.account_id = (SELECT account_id FROM st) AND o.wide = w.wide
                     ORDER BY o.block_num, o.block_seq * 100 + o.role LIMIT 1) x),
   span AS (SELECT date_trunc($2, least(coalesce($4 - interval '1 microsecond', st.indexed_time), st.indexed_time) AT TIME ZONE 'UTC') AS last_start,
                   date_trunc($2, coalesce($3, (SELECT ts FROM first_event), st.indexed_time) AT TIME ZONE 'UTC') AS first_start,
                   st.step
              FROM st),
   periods AS (SELECT p.start FROM (SELECT generate_series(span.last_start, span.first_start, -span.step) AS start FROM span
                                     LIMIT $5 + 1) p),
   edges AS (SELECT t.at, least((SELECT indexed_block FROM st), wallet_first_block_at(t.at AT TIME ZONE 'UTC') - 1) AS block
               FROM (SELECT min(p.start) AS at FROM periods p
                     UNION ALL SELECT p.start + (SELECT step FROM st) FROM periods p) t
              WHERE t.at IS NOT NULL),
   pairs AS (SELECT (row_number() OVER (ORDER BY e.at) - 1) AS j, e.at, e.block,
                    lag(e.block) OVER (ORDER BY e.at) AS prev_block FROM edges e),
   snaps AS (SELECT p.j, s.block_num, s.state FROM pairs p CROSS JOIN LATERAL (
                SELECT s.block_num, s.state FROM wallet_balance_snapshots s
                 WHERE s.account_id = (SELECT account_id FROM st) AND s.block_num <= p.block
                   AND s.block_num > coalesce(p.prev_block, -1)
                 ORDER BY s.block_num DESC LIMIT 1) s),
   ranges AS (SELECT p.block AS hi, greatest(coalesce(p.prev_block, -1), coalesce(s.block_num, -1)) AS lo
                FROM pairs p LEFT JOIN snaps s ON s.j = p.j),
   ready AS (SELECT * FROM wallet_balance_readiness($6)),
   at_block AS (SELECT coalesce(max(p.block), (SELECT indexed_block FROM st)) AS block FROM pairs p),
   undecodable AS (SELECT u.block_num, u.op_type FROM wallet_balance_undecodable u
                    WHERE u.account_id = (SELECT account_id FROM st) AND u.block_num <= (SELECT block FROM at_block)
                    ORDER BY u.block_num LIMIT 1)
   SELECT 0 AS kind, st.indexed_block::bigint, (SELECT block FROM at_block)::bigint, st.account_id::bigint, r.first_block::bigint,
          r.loading_from::bigint, r.snapshots_through::bigint, r.outdated_from::text, r.outdated_to::text,
          (SELECT block_num::text FROM undecodable), (SELECT wallet_op_type_name(op_type) FROM undecodable)
     FROM st, ready r
   UNION ALL SELECT 3, p.j, p.block::bigint, extract(epoch FROM p.at AT TIME ZONE 'UTC')::bigint, NULL, NULL, NULL,
          NULL, NULL, NULL, NULL FROM pairs p
   UNION ALL SELECT 1, s.block_num::bigint, s.j, NULL, NULL, NULL, NULL, encode(s.state, 'hex'), NULL, NULL, NULL FROM snaps s
   UNION ALL SELECT 2, e.block_num::bigint, e.block_seq::bigint, e.epoch, NULL, NULL, NULL, e.account, e.role, e.op_type, e.payload
     FROM ranges g CROSS JOIN LATERAL wallet_balance_events((SELECT account_id FROM st), g.lo, g.hi) e
    WHERE g.hi > g.lo
$$;

-- get_balances at a time ($2): the rows of wallet_balance_rows and one more
-- (kind 3) that says where the time falls among the stored blocks. Only
-- blocks with events have a wallet_blocks row, so the chain's last block at
-- or before the time is not known when blocks without events follow the last
-- stored one; but the balances are: with A the last stored block at or
-- before the time and B the first after it, no block between them has an
-- event (once the store holds every block up to B - 1), so every balance
-- after any block of A .. B - 1 is the one after A. The rows are read at
-- B - 1 (at most indexed_block), so that the readiness checks cover every
-- block up to the chain's block at the time, and the answer names A.
-- Kind 3: n1 A (NULL: none), n2 its epoch, n3 indexed_block's time as
-- get_status answers it (the indexer's checkpoint time when indexed_block is
-- the checkpoint, else the last stored block's at or below it), n4 B (NULL:
-- none), n5 its epoch.
CREATE FUNCTION wallet_balance_rows_at_time(account text, at_time timestamptz, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE SET jit = off AS $$
WITH st AS (SELECT s.indexed_block,
                   coalesce((SELECT c.block_time FROM indexer_checkpoint c WHERE c.block_num = s.indexed_block),
                            (SELECT b.ts FROM wallet_blocks b WHERE b.block_num <= s.indexed_block
                              ORDER BY b.block_num DESC LIMIT 1)) AS indexed_time
              FROM wallet_store_state s),
   at_or_before AS (SELECT b.block_num, b.ts FROM wallet_blocks b WHERE b.ts <= $2 ORDER BY b.ts DESC, b.block_num DESC LIMIT 1),
   after AS (SELECT b.block_num, b.ts FROM wallet_blocks b WHERE b.ts > $2 ORDER BY b.ts, b.block_num LIMIT 1)
   SELECT * FROM wallet_balance_rows($1, (SELECT least(st.indexed_block, (SELECT block_num FROM after) - 1) FROM st), $3)
   UNION ALL SELECT 3, a.block_num::bigint, extract(epoch FROM a.ts)::bigint, extract(epoch FROM st.indexed_time)::bigint,
          n.block_num::bigint, extract(epoch FROM n.ts)::bigint, NULL, NULL, NULL, NULL, NULL
     FROM st LEFT JOIN at_or_before a ON true LEFT JOIN after n ON true
$$;
GRANT EXECUTE ON FUNCTION wallet_balance_rows_at_time(text, timestamptz, smallint) TO wallet_api_reader;
