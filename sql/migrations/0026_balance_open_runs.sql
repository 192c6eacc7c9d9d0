-- 0026: the open change runs apart (issue 28; docs/store-layout.md, "Change
-- runs"). Until 0024 every run ended at the balance pass's period end, so
-- each account touched in a period started a run there, each run carrying
-- the account's whole state: 49 bytes per event at the bench's ten periods.
-- Now a run ends only when it reaches 64 events (at the end of that block);
-- each account's last run, still growing, is its open run, kept in
-- wallet_balance_open_runs (one row per account, rewritten by the pass in
-- the period's transaction and vacuumed after it), and the closed runs are
-- appended to wallet_balance_runs and never updated. An open run holds
-- every event of its account after after_block up to the pass's checkpoint
-- (wallet_balance_snapshot_state.through_block): it has no through_block of
-- its own. The next run of an account starts where its last closed run
-- ends. Readers take the account's last run starting at or below a block:
-- its open run when that starts at or below it, else its last closed one. A rewind below the
-- checkpoint cuts both (wallet::store::cut_balance_runs).
CREATE TABLE wallet_balance_open_runs (
    account_id  integer PRIMARY KEY,
    after_block integer NOT NULL,  -- the state's block: the run's events are after it
    state       bytea   NOT NULL,  -- wallet::BalanceState::encode, after every event up to after_block
    changes     bytea   NOT NULL   -- wallet::encode_run(events, after_block), events up to the checkpoint
);
ALTER TABLE wallet_balance_open_runs ALTER COLUMN state SET STORAGE MAIN, ALTER COLUMN changes SET STORAGE MAIN;
GRANT SELECT ON wallet_balance_open_runs TO wallet_api_reader;

-- Every run, closed or open, with the open runs' end the pass's checkpoint
-- (for inspection and tests; the reads below probe each table apart).
CREATE VIEW wallet_balance_all_runs AS
SELECT r.account_id, r.after_block, r.through_block, r.state, r.changes FROM wallet_balance_runs r
UNION ALL
SELECT o.account_id, o.after_block, (SELECT c.through_block FROM wallet_balance_snapshot_state c), o.state, o.changes
  FROM wallet_balance_open_runs o;
GRANT SELECT ON wallet_balance_all_runs TO wallet_api_reader;

-- 0024's reads on both tables: the same functions, rows and parameters (the
-- previous release's module calls them too); the account's last run starting
-- at or below a block is its open one when that starts at or below it (a
-- probe of the small table), else its last closed one (an index probe, LIMIT
-- 1; for a period boundary the later of the two). get_balances'
-- events after the run (above the pass's checkpoint) are read by the keyset
-- index, one range per `wide` (OFFSET 0 keeps the planner from scanning the
-- account's whole wallet_events_type_keyset range: 100 of the busiest
-- account's 104 buffers at the head).
CREATE OR REPLACE FUNCTION wallet_balance_run_rows(account text, at_block integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
WITH st AS (SELECT s.indexed_block, coalesce($2, s.indexed_block) AS at_block, (SELECT id FROM wallet_accounts WHERE name = $1) AS account_id,
                 s.first_block, s.loading_from, s.stored_version FROM wallet_store_state s),
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
          st.loading_from::bigint, NULL::bigint, (SELECT outdated_from::text FROM outdated), (SELECT outdated_to::text FROM outdated),
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

CREATE OR REPLACE FUNCTION wallet_balance_history_run_rows(account text, before_block integer, before_key integer,
    from_time timestamptz, to_time timestamptz, scan integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
WITH bounds AS (SELECT s.indexed_block, (SELECT id FROM wallet_accounts WHERE name = $1) AS account_id,
                       least(s.indexed_block + 1, CASE WHEN $5 IS NULL THEN 2147483647 ELSE wallet_first_block_at($5) END) AS end_block,
                       CASE WHEN $4 IS NULL THEN 0 ELSE wallet_first_block_at($4) END AS lower_block,
                       s.first_block, s.loading_from, s.stored_version
                  FROM wallet_store_state s),
   st AS (SELECT b.*, CASE WHEN $2 < b.end_block THEN $2 ELSE b.end_block END AS ub,
                      CASE WHEN $2 < b.end_block THEN $3 ELSE 0 END AS uk FROM bounds b),
   pos AS (SELECT st.*, CASE WHEN st.uk > 0 THEN st.ub ELSE st.ub - 1 END AS at_block FROM st),
   outdated AS (SELECT o.outdated_from, o.outdated_to FROM wallet_balance_readiness($7) o WHERE (SELECT stored_version FROM bounds) < $7),
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
   open_run AS MATERIALIZED (SELECT o.after_block, (SELECT k.through_block FROM wallet_balance_snapshot_state k) AS through_block,
                                    o.state, o.changes FROM wallet_balance_open_runs o
                              WHERE o.account_id = (SELECT account_id FROM pos) AND o.after_block < (SELECT block_num FROM low)),
   snap AS (SELECT least(r.through_block, (SELECT block_num FROM low) - 1) AS block_num, r.after_block, r.state, r.changes
              FROM (SELECT * FROM open_run
                    UNION ALL
                    (SELECT c.after_block, c.through_block, c.state, c.changes FROM wallet_balance_runs c
                      WHERE c.account_id = (SELECT account_id FROM pos) AND c.after_block < (SELECT block_num FROM low) AND NOT EXISTS (SELECT 1 FROM open_run)
                      ORDER BY c.after_block DESC LIMIT 1)) r),
   since AS (SELECT coalesce((SELECT block_num FROM snap), -1) AS block_num)
   SELECT 0 AS kind, pos.indexed_block::bigint, pos.at_block::bigint, pos.account_id::bigint, pos.first_block::bigint,
          pos.loading_from::bigint, NULL::bigint, (SELECT outdated_from::text FROM outdated), (SELECT outdated_to::text FROM outdated),
          (SELECT block_num::text FROM undecodable), (SELECT wallet_op_type_name(op_type) FROM undecodable)
     FROM pos
   UNION ALL SELECT 1, snap.block_num::bigint, NULL, snap.after_block::bigint, NULL, NULL, NULL, encode(snap.state, 'hex'),
          encode(snap.changes, 'hex'), NULL, NULL FROM snap
   UNION ALL SELECT 3, pos.lower_block::bigint, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM pos
   UNION ALL SELECT 2, e.block_num::bigint, e.block_seq::bigint, extract(epoch FROM e.ts)::bigint, NULL, NULL, NULL,
          CASE WHEN e.account_id = (SELECT account_id FROM pos) THEN $1
               ELSE (SELECT a.name FROM wallet_accounts a WHERE a.id = e.account_id) END, wallet_role_name(e.role)::text,
          wallet_op_type_name(e.op_type)::text,
          wallet_operation_payload((SELECT b.ops -> e.block_seq::text FROM wallet_blocks b WHERE b.block_num = e.block_num),
                                   e.block_num, e.ts, e.op_in_trx, e.virtual_op, e.trx_id, e.op_type)::text
     FROM (SELECT o.* FROM wallet_events o
            WHERE o.account_id = (SELECT account_id FROM pos) AND o.wide IN (false, true)
              AND (SELECT block_num FROM low) IS NOT NULL
              AND o.block_num > (SELECT block_num FROM since)
              AND (o.block_num, o.block_seq * 100 + o.role) < ((SELECT ub FROM pos), (SELECT uk FROM pos))
           UNION ALL
           SELECT o.* FROM wallet_balance_carried c CROSS JOIN LATERAL (SELECT * FROM wallet_events o
                     WHERE o.account_id = c.event_account_id AND o.wide IN (false, true) AND o.block_num = c.block_num
                       AND o.block_seq * 100 + o.role = c.block_seq * 100 + c.role) o
            WHERE c.account_id = (SELECT account_id FROM pos) AND (SELECT block_num FROM low) IS NOT NULL
              AND c.block_num > (SELECT block_num FROM since)
              AND (c.block_num, c.block_seq * 100 + c.role) < ((SELECT ub FROM pos), (SELECT uk FROM pos))) e
$$;

CREATE OR REPLACE FUNCTION wallet_balance_period_run_rows(account text, granularity text, from_time timestamptz, to_time timestamptz,
    max_periods integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
WITH st AS (SELECT s.indexed_block, (SELECT id FROM wallet_accounts WHERE name = $1) AS account_id,
                   (SELECT b.ts FROM wallet_blocks b WHERE b.block_num = s.indexed_block) AS indexed_time,
                   ('1 ' || $2)::interval AS step, s.first_block, s.loading_from, s.stored_version
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
   snaps AS (SELECT p.j, least(r.through_block, p.block) AS block_num, r.after_block, r.state, r.changes
               FROM pairs p CROSS JOIN LATERAL (
                SELECT r.after_block, r.through_block, r.state, r.changes FROM (SELECT * FROM ((SELECT c.after_block, c.through_block, c.state, c.changes FROM wallet_balance_runs c
                WHERE c.account_id = (SELECT account_id FROM st) AND c.after_block <= p.block ORDER BY c.after_block DESC LIMIT 1)
              UNION ALL
              SELECT o.after_block, (SELECT k.through_block FROM wallet_balance_snapshot_state k), o.state, o.changes
                FROM wallet_balance_open_runs o
               WHERE o.account_id = (SELECT account_id FROM st) AND o.after_block <= p.block) u ORDER BY u.after_block DESC LIMIT 1) r) r
              WHERE least(r.through_block, p.block) > coalesce(p.prev_block, -1)),
   ranges AS (SELECT p.block AS hi, greatest(coalesce(p.prev_block, -1), coalesce(s.block_num, -1)) AS lo
                FROM pairs p LEFT JOIN snaps s ON s.j = p.j),
   outdated AS (SELECT o.outdated_from, o.outdated_to FROM wallet_balance_readiness($6) o WHERE (SELECT stored_version FROM st) < $6),
   at_block AS (SELECT coalesce(max(p.block), (SELECT indexed_block FROM st)) AS block FROM pairs p),
   undecodable AS (SELECT u.block_num, u.op_type FROM wallet_balance_undecodable u
                    WHERE u.account_id = (SELECT account_id FROM st) AND u.block_num <= (SELECT block FROM at_block)
                    ORDER BY u.block_num LIMIT 1)
   SELECT 0 AS kind, st.indexed_block::bigint, (SELECT block FROM at_block)::bigint, st.account_id::bigint, st.first_block::bigint,
          st.loading_from::bigint, NULL::bigint, (SELECT outdated_from::text FROM outdated), (SELECT outdated_to::text FROM outdated),
          (SELECT block_num::text FROM undecodable), (SELECT wallet_op_type_name(op_type) FROM undecodable)
     FROM st
   UNION ALL SELECT 3, p.j, p.block::bigint, extract(epoch FROM p.at AT TIME ZONE 'UTC')::bigint, NULL, NULL, NULL,
          NULL, NULL, NULL, NULL FROM pairs p
   UNION ALL SELECT 1, s.block_num::bigint, s.j, s.after_block::bigint, NULL, NULL, NULL, encode(s.state, 'hex'),
          encode(s.changes, 'hex'), NULL, NULL FROM snaps s
   UNION ALL SELECT 2, e.block_num::bigint, e.block_seq::bigint, extract(epoch FROM e.ts)::bigint, NULL, NULL, NULL,
          CASE WHEN e.account_id = (SELECT account_id FROM st) THEN $1
               ELSE (SELECT a.name FROM wallet_accounts a WHERE a.id = e.account_id) END, wallet_role_name(e.role)::text,
          wallet_op_type_name(e.op_type)::text,
          wallet_operation_payload((SELECT b.ops -> e.block_seq::text FROM wallet_blocks b WHERE b.block_num = e.block_num),
                                   e.block_num, e.ts, e.op_in_trx, e.virtual_op, e.trx_id, e.op_type)::text
     FROM ranges g CROSS JOIN LATERAL (
            SELECT o.* FROM wallet_events o
             WHERE o.account_id = (SELECT account_id FROM st) AND o.wide IN (false, true)
               AND o.block_num > g.lo AND o.block_num <= g.hi
            UNION ALL
            SELECT o.* FROM wallet_balance_carried c CROSS JOIN LATERAL (SELECT * FROM wallet_events o
                      WHERE o.account_id = c.event_account_id AND o.wide IN (false, true) AND o.block_num = c.block_num
                        AND o.block_seq * 100 + o.role = c.block_seq * 100 + c.role) o
             WHERE c.account_id = (SELECT account_id FROM st) AND c.block_num > g.lo AND c.block_num <= g.hi) e
    WHERE g.hi > g.lo
$$;
