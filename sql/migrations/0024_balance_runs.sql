-- 0024: the balances stored as change runs, in place of the snapshots (issue
-- 28; docs/store-layout.md, "Change runs"), which are no longer written. The balance pass
-- (wallet/balance_snapshots.hpp) writes, per account, its events that change
-- its balances (its own, and other accounts' events carrying a change of it;
-- its undecodable ones marked) in runs: each row the account's whole balance
-- state after block after_block (wallet::BalanceState::encode, what a
-- snapshot held) and its events after it, as varints (wallet/balance_runs.hpp:
-- block delta, block_seq, role, op type, the signed changes). A run holds
-- every event of the account in after_block + 1 .. through_block; it ends at
-- the end of a block where it reaches 64 events and at the end of the pass's
-- period, and the account's next run starts where one ends (or at the start
-- of the next period in which it has events: none between). Runs are only
-- appended (no row updated in place, no dead versions); a rewind below the
-- pass's checkpoint cuts the run across it. A state at block B below the
-- checkpoint is then one row: the account's last run starting at or below
-- B, its changes up to B applied in the worker; above the checkpoint the
-- events after the last run's end are replayed as before.
-- Genesis states (testnets' and the simulator's) are runs without events.
CREATE TABLE wallet_balance_runs (
    account_id    integer NOT NULL,
    after_block   integer NOT NULL,  -- the state's block: the run's events are after it
    through_block integer NOT NULL,  -- every event of the account up to this block is in the run
    state         bytea   NOT NULL,  -- wallet::BalanceState::encode, after every event up to after_block
    changes       bytea   NOT NULL,  -- wallet::encode_run(events, after_block)
    PRIMARY KEY (account_id, after_block)
);
-- Kept in the heap row (compressed there if ever over the TOAST threshold):
-- a read takes one heap page, not the TOAST table's index and pages too.
ALTER TABLE wallet_balance_runs ALTER COLUMN state SET STORAGE MAIN, ALTER COLUMN changes SET STORAGE MAIN;

-- A store upgraded from the snapshots: each becomes a run without events
-- (the state at its block; the events after it are replayed from the events
-- as before), and the pass goes on from its checkpoint with runs.
-- wallet_balance_snapshots and 0021's functions stay, no longer written: the
-- previous release's module reads them until nginx reloads (docs/deploy.md,
-- "Upgrade"), and they still answer right (the snapshots up to the pass's
-- checkpoint and the events after them; a rewind below the checkpoint still
-- deletes the snapshots above it). A later release drops them.
INSERT INTO wallet_balance_runs (account_id, after_block, through_block, state, changes)
SELECT account_id, block_num, block_num, state, '\x00'::bytea FROM wallet_balance_snapshots;

GRANT SELECT ON wallet_balance_runs TO wallet_api_reader;

-- The three balance reads of 0021 on the runs, new functions (this
-- release's module calls them) with the same rows but the
-- state's (kind 1): n1 the block the state is at (the run's end or the asked
-- block, whichever is lower), n3 the run's start, t1 the state at its start,
-- t2 the run's changes (hex); the worker applies them up to n1
-- (wallet::run_state_at). The events are read after n1 as after a snapshot;
-- get_balances reads none when n1 is the asked block (below the pass's
-- checkpoint, one index probe and one row).
CREATE FUNCTION wallet_balance_run_rows(account text, at_block integer, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
WITH st AS (SELECT s.indexed_block, coalesce($2, s.indexed_block) AS at_block, (SELECT id FROM wallet_accounts WHERE name = $1) AS account_id,
                 s.first_block, s.loading_from, s.stored_version FROM wallet_store_state s),
   outdated AS (SELECT o.outdated_from, o.outdated_to FROM wallet_balance_readiness($3) o WHERE (SELECT stored_version FROM st) < $3),
   snap AS (SELECT least(r.through_block, (SELECT at_block FROM st)) AS block_num, r.after_block, r.state, r.changes
              FROM wallet_balance_runs r
             WHERE r.account_id = (SELECT account_id FROM st) AND r.after_block <= (SELECT at_block FROM st)
             ORDER BY r.after_block DESC LIMIT 1),
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
     FROM (SELECT o.* FROM wallet_events o
            WHERE o.account_id = (SELECT account_id FROM st) AND o.wide IN (false, true)
              AND o.block_num > (SELECT block_num FROM since) AND o.block_num <= (SELECT at_block FROM st)
              AND (SELECT block_num FROM since) < (SELECT at_block FROM st)
           UNION ALL
           SELECT o.* FROM wallet_balance_carried c CROSS JOIN LATERAL (SELECT * FROM wallet_events o
                     WHERE o.account_id = c.event_account_id AND o.wide IN (false, true) AND o.block_num = c.block_num
                       AND o.block_seq * 100 + o.role = c.block_seq * 100 + c.role) o
            WHERE c.account_id = (SELECT account_id FROM st) AND c.block_num > (SELECT block_num FROM since)
              AND c.block_num <= (SELECT at_block FROM st) AND (SELECT block_num FROM since) < (SELECT at_block FROM st)) e
$$;

CREATE FUNCTION wallet_balance_history_run_rows(account text, before_block integer, before_key integer,
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
   snap AS (SELECT least(r.through_block, (SELECT block_num FROM low) - 1) AS block_num, r.after_block, r.state, r.changes
              FROM wallet_balance_runs r
             WHERE r.account_id = (SELECT account_id FROM pos) AND r.after_block < (SELECT block_num FROM low)
             ORDER BY r.after_block DESC LIMIT 1),
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

CREATE FUNCTION wallet_balance_period_run_rows(account text, granularity text, from_time timestamptz, to_time timestamptz,
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
                SELECT r.after_block, r.through_block, r.state, r.changes FROM wallet_balance_runs r
                 WHERE r.account_id = (SELECT account_id FROM st) AND r.after_block <= p.block
                 ORDER BY r.after_block DESC LIMIT 1) r
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
GRANT EXECUTE ON FUNCTION wallet_balance_run_rows(text, integer, smallint) TO wallet_api_reader;
GRANT EXECUTE ON FUNCTION wallet_balance_history_run_rows(text, integer, integer, timestamptz, timestamptz, integer, smallint)
    TO wallet_api_reader;
GRANT EXECUTE ON FUNCTION wallet_balance_period_run_rows(text, text, timestamptz, timestamptz, integer, smallint)
    TO wallet_api_reader;

-- get_balances at a time (0022's wallet_balance_rows_at_time) on the runs.
CREATE FUNCTION wallet_balance_run_rows_at_time(account text, at_time timestamptz, current_version smallint)
RETURNS TABLE (kind integer, n1 bigint, n2 bigint, n3 bigint, n4 bigint, n5 bigint, n6 bigint,
               t1 text, t2 text, t3 text, t4 text)
LANGUAGE sql STABLE AS $$
WITH st AS (SELECT s.indexed_block,
                   coalesce((SELECT c.block_time FROM indexer_checkpoint c WHERE c.block_num = s.indexed_block),
                            (SELECT b.ts FROM wallet_blocks b WHERE b.block_num <= s.indexed_block
                              ORDER BY b.block_num DESC LIMIT 1)) AS indexed_time
              FROM wallet_store_state s),
   at_or_before AS (SELECT b.block_num, b.ts FROM wallet_blocks b WHERE b.ts <= $2 ORDER BY b.ts DESC, b.block_num DESC LIMIT 1),
   after AS (SELECT b.block_num, b.ts FROM wallet_blocks b WHERE b.ts > $2 ORDER BY b.ts, b.block_num LIMIT 1),
   target AS (SELECT least(st.indexed_block, (SELECT block_num FROM after) - 1) AS at_block FROM st)
   SELECT r.* FROM target CROSS JOIN LATERAL wallet_balance_run_rows($1, target.at_block, $3) r
   UNION ALL SELECT 3, a.block_num::bigint, extract(epoch FROM a.ts)::bigint, extract(epoch FROM st.indexed_time)::bigint,
          n.block_num::bigint, extract(epoch FROM n.ts)::bigint, NULL, NULL, NULL, NULL, NULL
     FROM st LEFT JOIN at_or_before a ON true LEFT JOIN after n ON true
$$;
GRANT EXECUTE ON FUNCTION wallet_balance_run_rows_at_time(text, timestamptz, smallint) TO wallet_api_reader;
