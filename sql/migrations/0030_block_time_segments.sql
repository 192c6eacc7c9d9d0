-- 0030: the pages' block times by segments of 3-second blocks (issue 28;
-- docs/store-layout.md, "Change runs"). 0029 packed the stored blocks' times
-- 256 blocks a row (wallet_block_times) and a page read one row per
-- 256-block chunk of its events: a sparse account's events lie in as many
-- chunks as it has events (the bench's median account: 12 chunks of 13
-- events, 24 of its page's 39 buffers).
--
-- Hive's blocks are 3 seconds apart but after a missed block (or a time
-- jump), so a block's time is its segment's base time plus 3 seconds per
-- block after the segment's first block, and a segment starts only at such
-- an irregularity. wallet_block_time_segments holds one row per segment of
-- the stored blocks up to the balance pass's checkpoint (a stored block
-- starts one when its time is not its previous stored block's plus 3 seconds
-- per block between them): a page reads the segment at or below its oldest
-- event and those starting up to its newest (two probes of the primary key),
-- whatever the number of its events (the bench's median account: 3). The
-- synthetic chains' blocks are all 3 s apart: one row. On mainnet, one
-- row per missed block or time jump (about 40 bytes each with the key);
-- a page spanning many of them reads them all (about 250 a leaf page).
--
-- wallet_block_times is dropped (0029's chunks: 152 kB, 0.32 bytes an event
-- at the bench); wallet_block_times_refresh keeps its signature (the pass
-- and the rewind call it, wallet::store) and writes the segments. The fill
-- below, on the bench's store (20,000 blocks, load average 20): about 70 ms
-- (0029's chunks: 2.4 to 3.7 s); linearly at mainnet's 90 million blocks
-- about 5 minutes, plus reading wallet_blocks from disk there.
-- not additive: wallet_block_times is dropped. No module reads it but through
-- wallet_balance_history_page_rows (7 arguments), which this migration
-- replaces by one giving the same rows from the segments.
DROP TABLE wallet_block_times;

CREATE TABLE wallet_block_time_segments (
    first_block integer     NOT NULL,  -- the segment's first stored block
    base        timestamptz NOT NULL,  -- its time; block b of the segment: base + 3 s * (b - first_block)
    PRIMARY KEY (first_block) INCLUDE (base)
);
GRANT SELECT ON wallet_block_time_segments TO wallet_api_reader;

-- The segments of blocks from_block .. through_block written again from
-- wallet_blocks (each stored block against the stored block before it); those
-- starting above through_block are deleted (a rewind).
CREATE OR REPLACE FUNCTION wallet_block_times_refresh(from_block integer, through_block integer) RETURNS void
LANGUAGE sql AS $$
DELETE FROM wallet_block_time_segments WHERE first_block >= $1;
INSERT INTO wallet_block_time_segments (first_block, base)
SELECT x.block_num, x.ts
  FROM (SELECT b.block_num, b.ts, lag(b.block_num) OVER w AS prev_block, lag(b.ts) OVER w AS prev_ts
          FROM wallet_blocks b
         WHERE b.block_num >= coalesce((SELECT max(p.block_num) FROM wallet_blocks p WHERE p.block_num < $1), 0)
           AND b.block_num <= $2
        WINDOW w AS (ORDER BY b.block_num)) x
 WHERE x.block_num >= $1
   AND (x.prev_block IS NULL OR x.ts <> x.prev_ts + (x.block_num - x.prev_block) * interval '3 seconds');
$$;

SELECT wallet_block_times_refresh(0, k.through_block) FROM wallet_balance_snapshot_state k;


-- The worker's remembered account ids (api_accounts.hpp), as get_wallet_history's pages take them: the
-- get_balances and page reads take the id the worker remembered for the name ($4 or $8) with the store
-- generation it was read under ($5 or $9) and skip the name's lookup (two buffers) while the store is
-- that one; their header row (kind 0) gives the generation used in n6. New functions (this release's
-- module calls them); the previous ones give the same rows as before through them.
-- 0029's page, its times from the segments.
CREATE FUNCTION wallet_balance_history_page_rows(account text, before_block integer, before_key integer,
    from_time timestamptz, to_time timestamptz, scan integer, current_version smallint, remembered_id integer, remembered_generation bigint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
WITH RECURSIVE bounds AS (SELECT s.indexed_block,
                       CASE WHEN s.generation = $9 THEN $8 ELSE (SELECT id FROM wallet_accounts WHERE name = $1) END AS account_id,
                       least(s.indexed_block + 1, CASE WHEN $5 IS NULL THEN 2147483647 ELSE wallet_first_block_at($5) END) AS end_block,
                       CASE WHEN $4 IS NULL THEN 0 ELSE wallet_first_block_at($4) END AS lower_block,
                       s.first_block, s.loading_from, s.stored_version, s.generation
                  FROM wallet_store_state s),
   st AS (SELECT b.*, CASE WHEN $2 < b.end_block THEN $2 ELSE b.end_block END AS ub,
                      CASE WHEN $2 < b.end_block THEN $3 ELSE 0 END AS uk FROM bounds b),
   pos AS (SELECT st.*, CASE WHEN st.uk > 0 THEN st.ub ELSE st.ub - 1 END AS at_block FROM st),
   outdated AS (SELECT o.outdated_from, o.outdated_to FROM wallet_balance_readiness($7) o WHERE (SELECT stored_version FROM bounds) < $7),
   undecodable AS (SELECT u.block_num, u.op_type FROM wallet_balance_undecodable u, pos
                    WHERE u.account_id = pos.account_id AND u.block_num <= pos.at_block ORDER BY u.block_num LIMIT 1),
   open_run AS MATERIALIZED (SELECT o.after_block, (SELECT k.through_block FROM wallet_balance_snapshot_state k) AS through_block,
                                    o.state, o.changes FROM wallet_balance_open_runs o
                              WHERE o.account_id = (SELECT account_id FROM pos) AND o.after_block < (SELECT ub FROM pos)),
   newest AS (SELECT * FROM open_run
              UNION ALL
              (SELECT c.after_block, c.through_block, c.state, c.changes FROM wallet_balance_runs c
                WHERE c.account_id = (SELECT account_id FROM pos) AND c.after_block < (SELECT ub FROM pos)
                  AND NOT EXISTS (SELECT 1 FROM open_run)
                ORDER BY c.after_block DESC LIMIT 1)),
   -- Newest first; `counted`: the events below the cursor of the runs so far (none starts below block 0).
   walk AS (SELECT n.after_block, n.through_block, n.state, n.changes, wallet_run_count(n.changes) AS events,
                   CASE WHEN n.through_block < (SELECT ub FROM pos) THEN wallet_run_count(n.changes) ELSE 0 END AS counted
              FROM newest n
            UNION ALL
            SELECT c.after_block, c.through_block, c.state, c.changes, wallet_run_count(c.changes),
                   w.counted + wallet_run_count(c.changes)
              FROM walk w CROSS JOIN LATERAL (
                   SELECT r.after_block, r.through_block, r.state, r.changes FROM wallet_balance_runs r
                    WHERE r.account_id = (SELECT account_id FROM pos) AND r.after_block < w.after_block
                    ORDER BY r.after_block DESC LIMIT 1) c
             WHERE w.counted <= $6 AND w.events > 0 AND w.after_block > 0 AND w.after_block >= (SELECT lower_block FROM pos)),
   -- The blocks no walked run holds, below the cursor: after each run up to the next one's start (none
   -- between runs since 0024) and after the newest; after nothing when the account has no run.
   gaps AS (SELECT g.lo, g.hi FROM (
              SELECT w.through_block AS lo,
                     least(coalesce(lead(w.after_block) OVER (ORDER BY w.after_block), 2147483647), (SELECT ub FROM pos)) AS hi
                FROM walk w
              UNION ALL
              SELECT -1, (SELECT ub FROM pos) WHERE NOT EXISTS (SELECT 1 FROM walk)) g
             WHERE g.hi > g.lo),
   run_events AS (SELECT e.block_num, e.carried_by FROM walk w CROSS JOIN LATERAL wallet_run_events(w.changes, w.after_block) e
                   WHERE e.block_num <= (SELECT ub FROM pos) AND e.block_num >= (SELECT lower_block FROM pos)),
   -- The time segments of the walked runs' events: the one at or below the oldest, and those starting up to the newest.
   segments AS MATERIALIZED (SELECT s.first_block, extract(epoch FROM s.base)::bigint AS epoch
                               FROM (SELECT min(r.block_num) AS lo, max(r.block_num) AS hi FROM run_events r) span
                               CROSS JOIN LATERAL (
                                    (SELECT t.first_block, t.base FROM wallet_block_time_segments t
                                      WHERE t.first_block <= span.lo ORDER BY t.first_block DESC LIMIT 1)
                                    UNION ALL
                                    SELECT t.first_block, t.base FROM wallet_block_time_segments t
                                     WHERE t.first_block > span.lo AND t.first_block <= span.hi) s)
   SELECT 0 AS kind, pos.indexed_block::bigint, pos.at_block::bigint, pos.account_id::bigint, pos.first_block::bigint,
          pos.loading_from::bigint, pos.generation, (SELECT outdated_from::text FROM outdated), (SELECT outdated_to::text FROM outdated),
          (SELECT block_num::text FROM undecodable), (SELECT wallet_op_type_name(op_type) FROM undecodable)
     FROM pos
   UNION ALL SELECT 1, w.through_block::bigint, NULL, w.after_block::bigint, NULL, NULL, NULL, encode(w.state, 'hex'),
          encode(w.changes, 'hex'), NULL, NULL FROM walk w
   UNION ALL SELECT 3, pos.lower_block::bigint, pos.ub::bigint, pos.uk::bigint, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM pos
   UNION ALL SELECT 4, r.block_num::bigint,
          coalesce((SELECT s.epoch + 3 * (r.block_num - s.first_block) FROM segments s
                     WHERE s.first_block <= r.block_num ORDER BY s.first_block DESC LIMIT 1),
                   (SELECT extract(epoch FROM b.ts)::bigint FROM wallet_blocks b WHERE b.block_num = r.block_num)),
          NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
     FROM (SELECT DISTINCT block_num FROM run_events) r
   UNION ALL SELECT 5, a.id::bigint, NULL, NULL, NULL, NULL, NULL, a.name::text, NULL, NULL, NULL
     FROM (SELECT DISTINCT carried_by FROM run_events WHERE carried_by IS NOT NULL) d
     CROSS JOIN LATERAL (SELECT x.id, x.name FROM wallet_accounts x WHERE x.id = d.carried_by LIMIT 1) a
   UNION ALL SELECT 2, e.block_num::bigint, e.block_seq::bigint, extract(epoch FROM e.ts)::bigint, NULL, NULL, NULL,
          CASE WHEN e.account_id = (SELECT account_id FROM pos) THEN $1
               ELSE (SELECT a.name FROM wallet_accounts a WHERE a.id = e.account_id) END, wallet_role_name(e.role)::text,
          wallet_op_type_name(e.op_type)::text,
          wallet_operation_payload((SELECT b.ops -> e.block_seq::text FROM wallet_blocks b WHERE b.block_num = e.block_num),
                                   e.block_num, e.ts, e.op_in_trx, e.virtual_op, e.trx_id, e.op_type)::text
     FROM gaps g CROSS JOIN LATERAL (
            SELECT o.* FROM (VALUES (false), (true)) AS w(wide) CROSS JOIN LATERAL (SELECT * FROM wallet_events o
             WHERE o.account_id = (SELECT account_id FROM pos) AND o.wide = w.wide
               AND o.block_num > g.lo AND o.block_num <= g.hi
               AND (o.block_num, o.block_seq * 100 + o.role) < ((SELECT ub FROM pos), (SELECT uk FROM pos)) OFFSET 0) o
            UNION ALL
            SELECT o.* FROM wallet_balance_carried c CROSS JOIN LATERAL (SELECT * FROM wallet_events o
                      WHERE o.account_id = c.event_account_id AND o.wide IN (false, true) AND o.block_num = c.block_num
                        AND o.block_seq * 100 + o.role = c.block_seq * 100 + c.role) o
             WHERE c.account_id = (SELECT account_id FROM pos) AND c.block_num > g.lo AND c.block_num <= g.hi
               AND (c.block_num, c.block_seq * 100 + c.role) < ((SELECT ub FROM pos), (SELECT uk FROM pos))) e
$$;

-- 0029's page function: the same rows, by the new one without a remembered id.
CREATE OR REPLACE FUNCTION wallet_balance_history_page_rows(account text, before_block integer, before_key integer,
    from_time timestamptz, to_time timestamptz, scan integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
SELECT r.kind, r.n1, r.n2, r.n3, r.n4, r.n5, CASE WHEN r.kind = 0 THEN NULL ELSE r.n6 END, r.t1, r.t2, r.t3, r.t4
  FROM wallet_balance_history_page_rows($1, $2, $3, $4, $5, $6, $7, NULL::integer, NULL::bigint) r
$$;

-- 0026's get_balances rows.
CREATE FUNCTION wallet_balance_run_rows(account text, at_block integer, current_version smallint,
                                        remembered_id integer, remembered_generation bigint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
WITH st AS (SELECT s.indexed_block, coalesce($2, s.indexed_block) AS at_block,
                 CASE WHEN s.generation = $5 THEN $4 ELSE (SELECT id FROM wallet_accounts WHERE name = $1) END AS account_id,
                 s.first_block, s.loading_from, s.stored_version, s.generation FROM wallet_store_state s),
   outdated AS (SELECT o.outdated_from, o.outdated_to FROM wallet_balance_readiness($3) o WHERE (SELECT stored_version FROM st) < $3),
   open_run AS MATERIALIZED (SELECT o.after_block, (SELECT k.through_block FROM wallet_balance_snapshot_state k) AS through_block,
                                    o.state, o.changes FROM wallet_balance_open_runs o
                              WHERE o.account_id = (SELECT account_id FROM st) AND o.after_block <= (SELECT at_block FROM st)),
   snap AS (SELECT least(r.through_block, (SELECT at_block FROM st)) AS block_num, r.after_block, r.state, r.changes
              FROM (SELECT * FROM open_run
                    UNION ALL
                    (SELECT c.after_block, c.through_block, c.state, c.changes FROM wallet_balance_runs c
                      WHERE c.account_id = (SELECT account_id FROM st) AND c.after_block <= (SELECT at_block FROM st) AND NOT EXISTS (SELECT 1 FROM open_run)
                      ORDER BY c.after_block DESC LIMIT 1)) r),
   since AS (SELECT coalesce((SELECT block_num FROM snap), -1) AS block_num),
   undecodable AS (SELECT u.block_num, u.op_type FROM wallet_balance_undecodable u, st
                    WHERE u.account_id = st.account_id AND u.block_num <= st.at_block ORDER BY u.block_num LIMIT 1)
   SELECT 0 AS kind, st.indexed_block::bigint, st.at_block::bigint, st.account_id::bigint, st.first_block::bigint,
          st.loading_from::bigint, st.generation, (SELECT outdated_from::text FROM outdated), (SELECT outdated_to::text FROM outdated),
          (SELECT block_num::text FROM undecodable), (SELECT wallet_op_type_name(op_type) FROM undecodable)
     FROM st
   UNION ALL SELECT 1, snap.block_num::bigint, NULL, snap.after_block::bigint, NULL, NULL, NULL, encode(snap.state, 'hex'),
          encode(snap.changes, 'hex'), NULL, NULL FROM snap
   UNION ALL SELECT 2, e.block_num::bigint, e.block_seq::bigint, NULL, NULL, NULL, NULL,
          CASE WHEN e.account_id = (SELECT account_id FROM st) THEN $1
               ELSE (SELECT a.name FROM wallet_accounts a WHERE a.id = e.account_id) END, wallet_role_name(e.role)::text,
          wallet_op_type_name(e.op_type)::text,
          wallet_operation_payload((SELECT b.ops -> e.block_seq::text FROM wallet_blocks b WHERE b.block_num = e.block_num),
                                   e.block_num, e.ts, e.op_in_trx, e.virtual_op, e.trx_id, e.op_type)::text
     FROM (SELECT o.* FROM (VALUES (false), (true)) AS w(wide) CROSS JOIN LATERAL (SELECT * FROM wallet_events o
            WHERE o.account_id = (SELECT account_id FROM st) AND o.wide = w.wide
              AND o.block_num > (SELECT block_num FROM since) AND o.block_num <= (SELECT at_block FROM st)
              AND (SELECT block_num FROM since) < (SELECT at_block FROM st) OFFSET 0) o
           UNION ALL
           SELECT o.* FROM wallet_balance_carried c CROSS JOIN LATERAL (SELECT * FROM wallet_events o
                     WHERE o.account_id = c.event_account_id AND o.wide IN (false, true) AND o.block_num = c.block_num
                       AND o.block_seq * 100 + o.role = c.block_seq * 100 + c.role) o
            WHERE c.account_id = (SELECT account_id FROM st) AND c.block_num > (SELECT block_num FROM since)
              AND c.block_num <= (SELECT at_block FROM st) AND (SELECT block_num FROM since) < (SELECT at_block FROM st)) e
$$;

-- 0026's get_balances rows: the same, by the new function without a remembered id.
CREATE OR REPLACE FUNCTION wallet_balance_run_rows(account text, at_block integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
SELECT r.kind, r.n1, r.n2, r.n3, r.n4, r.n5, CASE WHEN r.kind = 0 THEN NULL ELSE r.n6 END, r.t1, r.t2, r.t3, r.t4
  FROM wallet_balance_run_rows($1, $2, $3, NULL::integer, NULL::bigint) r
$$;

GRANT EXECUTE ON FUNCTION wallet_balance_run_rows(text, integer, smallint, integer, bigint) TO wallet_api_reader;
GRANT EXECUTE ON FUNCTION wallet_balance_history_page_rows(text, integer, integer, timestamptz, timestamptz, integer, smallint,
    integer, bigint) TO wallet_api_reader;
